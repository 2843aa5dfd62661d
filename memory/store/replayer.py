"""The one replay of a home's journal into its own graph: catch up from the position the graph
has reached, make the graph equal to the journal when that position is unknown, and say how the
two differ. The dual store's holder runs it, and so does ``dualmem migrate`` on the home's own
graph (``memory.store.migration``); a move to another graph and the importers use ``Migrator``.

Every method is called under the holder's lock: one replay touches the graph at a time.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import orjson

from backends.errors import FileRefused, MigrationError
from backends.graph.protocol import Graph
from backends.model import Episode
from backends.protocol import Position
from backends.safe_files import NOTE_LIMIT, overwrite, read_regular
from fallback import FileBackend
from memory.store import graphs
from memory.store.kept_facts import KeptFacts
from memory.store.layers import Verdict
from migrate.migrator import Progress, upsert_each

log = logging.getLogger(__name__)

BATCH = 500
INLINE_GAP = 2000
"""a reader in the holder catches the graph up itself when fewer changes than this wait;
a larger gap (another process's big import) is left to the background, and the read served
from the files meanwhile"""
APPLIED_FILE = "journal.json"


class Refused(NamedTuple):
    """A journal episode the graph refused (a body over its limit, written by hand)."""

    group: str
    why: str
    location: str
    """its file"""


@dataclass(frozen=True)
class Replay:
    """What a replay has done since it took the graph over, and what is left."""

    replayed: Verdict
    """episodes written, deleted and joined (refused ones not counted)"""
    refused: dict[str, Refused]
    left: Verdict
    """how the graph differs from the journal now, the refused episodes aside"""
    journal: int
    """episodes in the journal"""


def _add(a: Verdict, b: Verdict) -> Verdict:
    return Verdict(*(x + y for x, y in zip(a, b, strict=True)))


class Replayer:
    """Keeps ``graph`` equal to the journal ``files``; the position it has reached is noted in
    the graph and in ``graph_dir`` (for other processes' status)."""

    def __init__(self, files: FileBackend, graph: Graph, graph_dir: Path,
                 kept: KeptFacts, progress: Progress | None = None) -> None:
        self.files = files
        self._progress = progress
        """told (done, total) as the graph takes the journal in (``dualmem migrate``'s bar)"""
        self.graph = graph
        self._graph_dir = graph_dir
        self._kept = kept
        self.applied: Position | None = None
        """the journal position the graph holds; None until it has caught up since take-over"""
        self._recorded: Position | None = None
        self.skipped: dict[str, Refused] = {}
        """journal episodes the graph refused, by id"""
        self._unreported = Verdict(0, 0, 0)
        """what making the graph equal to the journal changed, not yet told by ``repair``"""
        self.replayed = Verdict(0, 0, 0)
        """everything this replayer wrote, deleted and joined (told by ``dualmem migrate``)"""

    async def quick_to_take_over(self) -> bool:
        """Taking the graph over now costs little: few changes since its position, or a small
        journal. Otherwise it happens in the background while the files answer."""
        position = self.files.position()
        applied = await self.graph.applied(position.epoch)
        if applied is not None and applied.epoch == position.epoch:
            return 0 <= position.seq - applied.seq <= INLINE_GAP
        return await self.files.count() <= INLINE_GAP

    async def take_over(self) -> None:
        """Bring a newly held graph up to the journal, as cheaply as its recorded position
        allows, and check it against the journal's count."""
        graph = self.graph
        self._kept.read_everything()
        self.applied = await graph.applied(self.files.position().epoch)
        if self.applied is None:
            await self.make_equal()
            await self._kept.restore(graph)
        else:
            await self.catch_up()
            # A shared graph holds other homes' memories too: its count says nothing.
            if not graph.shared and (await graph.count() + len(self.skipped)
                                     != await self.files.count()):
                await self.make_equal()
                await self._kept.restore(graph)
        await self._kept.save(graph)
        await self.record()

    async def bring_up(self) -> None:
        """Take over when the graph has not caught up since it was held, else catch up."""
        if self.applied is None:
            await self.take_over()
        else:
            await self.catch_up()
            await self.record()

    async def catch_up(self) -> None:
        """Apply the journal's changes since the graph's position; a position the journal does
        not know (a rebuilt index) makes the graph equal to the journal instead."""
        assert self.applied is not None
        since, done = self.applied.seq, 0
        while True:
            changes = self.files.changes_since(self.applied, limit=BATCH)
            if changes.reset:
                await self.make_equal()
                since = self.applied.seq
                continue
            if not changes.written and not changes.deleted:
                if done:
                    self._tell(done, done)
                    await self._kept.save(self.graph)
                return
            found = [await self.files.get(episode_id) for episode_id in changes.written]
            written = [episode for episode in found if episode is not None]
            took = await self._write(written) if written else 0
            self._kept.written(episode.id for episode in written)
            for episode_id in changes.deleted:
                await self.graph.delete(episode_id)
            if changes.deleted:
                await self.files.forget_tombstones(changes.deleted)
            self.applied = changes.position
            self.replayed = _add(self.replayed, Verdict(took, len(changes.deleted), 0))
            done += len(changes.written) + len(changes.deleted)
            if self._progress is not None:  # each change moves the position by one: the gap
                self._progress(done, max(done, self.files.position().seq - since))  # bounds it

    def _tell(self, done: int, total: int) -> None:
        if self._progress is not None:
            self._progress(done, total)

    async def _write(self, episodes: Sequence[Episode]) -> int:
        """Write these into the graph; how many it took. One the graph refuses (a body over its
        limit, written by hand into the journal) is skipped and kept for status, never in the
        way of the rest."""
        refused = {episode.id: exc for episode, exc in await upsert_each(self.graph, episodes)}
        for episode in episodes:
            if episode.id in refused:
                self.skipped[episode.id] = Refused(episode.group_id, str(refused[episode.id]),
                                                   self.files.location(episode))
            else:
                self.skipped.pop(episode.id, None)
        return len(episodes) - len(refused)

    async def make_equal(self) -> Verdict:
        """Make the graph hold exactly the journal: write what it lacks or holds otherwise,
        delete what the journal records as deleted. A memory only the graph holds (written
        before the journal existed, or by ``--backend graph``) is never lost: it joins the
        journal first, unless the journal records its deletion. A graph that follows the
        journal (``graphs.follows_a_journal``) holds nothing the journal did not give it: what
        the journal lacks was deleted from it (an episode file deleted by hand, its index
        deleted since, which forgot it), and leaves the graph. A shared graph (a server) holds
        other homes' memories: they neither join this journal nor leave the graph."""
        graph, files = self.graph, self.files
        self._kept.read_everything()  # it writes past catch_up's count: the next save reads all
        position = files.position()
        journal = files.content_hashes()
        deleted = files.deleted_ids()
        stored = {episode.id: episode async for episode in graph.scan()}
        alone = not graph.shared and not graphs.follows_a_journal(
            await graph.applied(position.epoch))
        joining = [episode for key, episode in stored.items()
                   if key not in journal and key not in deleted] if alone else []
        for start in range(0, len(joining), BATCH):
            await files.upsert_many(joining[start : start + BATCH])
        journal.update((episode.id, episode.content_hash()) for episode in joining)
        await self._check_joined(joining)
        hashes = {key: episode.content_hash() for key, episode in stored.items()}
        writes = [key for key, digest in journal.items() if hashes.get(key) != digest]
        took = 0
        for start in range(0, len(writes), BATCH):
            batch = [await files.get(key) for key in writes[start : start + BATCH]]
            took += await self._write([episode for episode in batch if episode is not None])
            self._tell(start + len(batch), len(writes))
        removed = sorted(hashes.keys() & deleted if graph.shared
                         else hashes.keys() - journal.keys())
        for key in removed:
            await graph.delete(key)
        self.applied = position
        verdict = Verdict(len(writes), len(removed), len(joining))
        if verdict.changed:
            self._unreported = _add(self._unreported, verdict)
            self.replayed = _add(self.replayed, verdict._replace(written=took))
            log.info("graph made equal to the journal: %s", verdict)
            await graph.refresh_graphiti_indexes()  # after bulk writes, not after each
        return verdict

    async def _check_joined(self, joined: Sequence[Episode]) -> None:
        """Every memory that joined the journal reads back equal (content hash)."""
        for episode in joined:
            copy = await self.files.get(episode.id)
            if copy is None or copy.content_hash() != episode.content_hash():
                raise MigrationError(f"{episode.id} did not reach the journal intact")

    async def repair(self, *, graphiti_indexes: bool) -> Verdict:
        """Make the graph equal to the journal (see ``DualBackend.repair``); what changed,
        the take-over's included."""
        await self.make_equal()
        await self.catch_up()
        verdict, self._unreported = self._unreported, Verdict(0, 0, 0)
        if graphiti_indexes:
            await self.graph.build_graphiti_indexes()
        else:
            await self.graph.refresh_graphiti_indexes()
        await self.record()
        return verdict

    async def differences(self) -> Verdict:
        """How the graph differs from the journal once caught up (all zero when equal)."""
        await self.bring_up()
        journal = self.files.content_hashes()
        stored = {e.id: e.content_hash() async for e in self.graph.scan()}
        return Verdict(
            written=sum(stored.get(key) != digest for key, digest in journal.items()),
            deleted=len(stored.keys() & self.files.deleted_ids() if self.graph.shared
                        else stored.keys() - journal.keys()),
            joined=0,
        )

    async def report(self) -> Replay:
        """Bring the graph up to the journal; what this replay has done and what is left."""
        left = await self.differences()
        refused = dict(self.skipped)
        return Replay(self.replayed, refused, left._replace(written=left.written - len(refused)),
                      await self.files.count())

    async def record(self) -> None:
        """Store the graph's position in the graph and beside it (for other processes' status)."""
        if self.applied is None or self.applied == self._recorded:
            return
        await record_position(self.graph, self._graph_dir, self.applied)
        self._recorded = self.applied

    def forget_position(self) -> None:
        """The graph was emptied: the whole journal is replayed into it again."""
        self.applied = None
        with contextlib.suppress(OSError):
            (self._graph_dir / APPLIED_FILE).unlink(missing_ok=True)

    async def save_kept(self) -> None:
        await self._kept.save(self.graph)


async def record_position(graph: Graph, graph_dir: Path, position: Position) -> None:
    """``graph`` holds the journal up to ``position``: recorded in the graph, and beside it in
    ``graph_dir`` (for the status of a process that cannot ask the graph)."""
    await graph.record_applied(position)
    with contextlib.suppress(OSError, FileRefused):  # a link: the graph has it anyway
        note = {"epoch": position.epoch, "seq": position.seq, "pid": os.getpid()}
        overwrite(graph_dir / APPLIED_FILE, orjson.dumps(note))


async def preview_replay(files: FileBackend, graph_dir: Path) -> Verdict:
    """What a holder of the graph would write and delete now, from the position its last
    holder noted in ``graph_dir`` (none, or of another journal: the whole journal)."""
    position, now = recorded_position(graph_dir), files.position()
    if position is None or position.epoch != now.epoch:
        return Verdict(await files.count(), 0, 0)
    changes = files.changes_since(position, limit=max(1, now.seq - position.seq))
    if changes.reset:
        return Verdict(await files.count(), 0, 0)
    return Verdict(len(changes.written), len(changes.deleted), 0)


def recorded_position(graph_dir: Path) -> Position | None:
    """The graph's position as its holder last wrote it beside the database."""
    try:
        # Bounded, regular only: a FIFO planted there hung `status`.
        note = orjson.loads(read_regular(graph_dir / APPLIED_FILE, limit=NOTE_LIMIT,
                                         follow=False))
        return Position(str(note["epoch"]), int(note["seq"]))
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
