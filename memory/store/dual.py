"""The dual store (``auto``): the file layer is the complete journal, the graph the primary index.

Every acknowledged write is durable in the files first, whichever process makes it, so every
process reads every memory. Kùzu admits one read-write process per database: the process that
holds the graph brings it up to the journal's position before it answers (its reads are
current) and within about a second of any other process's write (the file layer's watcher wakes
it). The graph records the position it has reached. At take-over it catches up from there; a
graph that is new, of another journal, or whose count disagrees with the journal is made equal
to the journal again; one that cannot be opened because it is damaged is moved aside (never
deleted) and rebuilt. Until the graph has caught up, and in every process that does not hold
it, reads are answered from the files' own index. Non-holders retry the graph, so one takes
over when the holder exits.

A graph written before the journal existed (memories held only in the graph) is brought in at
its first take-over: its memories are written into the journal, except those deleted since.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from backends.errors import (
    BackendUnavailable,
    DualmemError,
    FileRefused,
    GraphEmptied,
    InvalidEpisode,
    MigrationError,
    WriteFailed,
)
from backends.graph.protocol import Graph
from backends.model import Episode, Hit, Receipt
from backends.protocol import Enriched, Enriches, Position, SetAside, upsert_all
from backends.safe_files import NOTE_LIMIT, overwrite, read_regular
from fallback import FileBackend
from memory.store import graphs
from memory.store.config import Config
from memory.store.layers import DualStatus, Verdict
from memory.store.outage import Outage, read_either, scan_either
from memory.store.providers import embedder_for, llm_for

if TYPE_CHECKING:  # the graph's modules import numpy: a one-shot read never opens the graph
    import asyncio
    import logging

    from backends.graph.embedder import AnyEmbedder
    from backends.graph.history import KeptFact


def _log() -> logging.Logger:
    import logging  # only a rare event logs; the import is ~10 ms of every one-shot command

    return logging.getLogger(__name__)


GraphOpener = Callable[[], Awaitable[Graph]]
"""Opens the graph layer or raises ``BackendUnavailable`` with the reason."""

RETRY_FIRST = 0.2
RETRY_MAX = 2.0
RETRY_LIVE = 30.0
"""seconds between attempts to open a graph whose holder is alive"""
DEBOUNCE = 0.05
SWEEP = 5.0
"""seconds between catch-ups when no change is seen, for changes a watcher can miss"""
BATCH = 500
INLINE_GAP = 2000
"""a reader in the holder catches the graph up itself when fewer changes than this wait;
a larger gap (another process's big import) is left to the background, and the read served
from the files meanwhile"""
NEVER_RETRY = frozenset({"not installed", "engine conflict", "another engine's database"})
LOCKED = "locked by another process"
DAMAGED = frozenset({"corrupt"})
HOLDING = "this process holds the graph"
SHARING = "this process writes the graph server directly"
CLOSE_WAIT = 30.0
"""seconds ``aclose`` waits for a supervisor in the middle of a graph write to stop"""
APPLIED_FILE = "journal.json"


class DualBackend:
    """A ``MemoryBackend`` over the file journal and the graph; open with ``DualBackend.open``."""

    layer = "dual"

    def __init__(self, files: FileBackend, open_graph: GraphOpener, graph_dir: Path,
                 ledger_path: Path) -> None:
        self._files = files
        self._open_graph = open_graph
        self._graph_dir = graph_dir
        self._ledger_path = ledger_path
        self._graph: Graph | None = None
        self._applied: Position | None = None
        """the journal position the graph holds; None until it has caught up since take-over"""
        self._recorded: Position | None = None
        self._why = "not opened yet"
        self._skipped: dict[str, tuple[str, str]] = {}
        """journal episodes the graph refused: id -> (group, why)"""
        self._rebuilt: str | None = None
        """what became of a damaged graph found at take-over, for status to tell"""
        self._unreported = Verdict(0, 0, 0)
        """what making the graph equal to the journal changed, not yet told by ``repair``"""
        self._saved: dict[str, KeptFact] | None = None
        """the history file's latest line of each fact it holds, by uuid (read once)"""
        self._unsaved: set[str] | None = None
        """the memories written since the history was saved, whose retired facts it may lack;
        None: any memory's (a previous holder's, graphiti's), so every retired fact is read"""
        self._saved_enriched: dict[str, str] | None = None
        """the enrichments the journal's file holds (episode id -> digest; read once), and
        those of memories of other homes on a shared graph, never saved here"""
        self._outage = Outage()
        self._retry = True
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    # asyncio is imported where a store holds the graph, or tries to: a one-shot store (every
    # hook, every search) runs without an event loop, and the import is a fifth of its start-up.

    @cached_property
    def _lock(self) -> asyncio.Lock:
        """Serialises every use of the graph: catching up, opening and closing it."""
        import asyncio

        return asyncio.Lock()

    @cached_property
    def _wake(self) -> asyncio.Event:
        import asyncio

        return asyncio.Event()

    @classmethod
    async def open(cls, files: FileBackend, open_graph: GraphOpener, graph_dir: Path,
                   ledger_path: Path, *, hold_graph: bool = True) -> DualBackend:
        """Take ``files`` (closed with the store) and try the graph once; in the background,
        bring the graph up to the journal when holding it, or keep retrying it otherwise.
        Without ``hold_graph`` the graph is never opened: the journal answers every read the
        same, and whoever holds the graph indexes this store's writes (one-shot commands)."""
        store = cls(files, open_graph, graph_dir, ledger_path)
        if not hold_graph:
            store._why = "not holding the graph (a one-shot command: the journal answers)"
            store._retry = False
            return store
        async with store._lock:
            await store._try_graph()
            if await store._quick_to_take_over():
                try:
                    await store._take_over()
                except DualmemError as exc:
                    store._fail(exc)
        import asyncio

        store._task = asyncio.create_task(store._supervise(), name="dualmem-dual")
        return store

    @property
    def holds_graph(self) -> bool:
        return self._graph is not None

    async def retired_facts(self) -> list[KeptFact] | None:
        """The history the graph keeps (``Graph.retired_facts``); None when it is held
        elsewhere."""
        return None if self._graph is None else await self._graph.retired_facts()

    @property
    def _holding(self) -> str:
        return SHARING if self._graph is not None and self._graph.shared else HOLDING

    @property
    def layer_in_use(self) -> str:
        """Where reads are answered now: ``graph`` or ``file``."""
        return "graph" if self._graph is not None and self._applied is not None else "file"

    @property
    def reason(self) -> str:
        return self._why

    @property
    def problems(self) -> list[tuple[Path, str]]:
        """Files the file layer could not read (shown by ``dualmem status``)."""
        return self._files.problems

    # -- writes: the journal first, then the graph when this process holds it ---------------

    async def upsert(self, episode: Episode) -> Receipt:
        return (await self.upsert_many([episode]))[0]

    async def upsert_many(self, episodes: Sequence[Episode]) -> list[Receipt]:
        """Durable in the journal (else it raises), and in the graph too when this process holds
        it and the graph takes it; the receipts say which (``pending``: not in the graph yet)."""
        receipts = await upsert_all(self._files, episodes)
        indexed = await self._index_now()
        layer = "graph" if indexed else "file"
        return [receipt.model_copy(update={"layer": layer, "pending": not indexed})
                for receipt in receipts]

    async def delete(self, episode_id: str) -> bool:
        existed = await self._files.delete(episode_id)
        if not existed:
            # A graph written before the journal may hold it: its first take-over must not
            # bring it back into the journal.
            await self._files.bury([episode_id])
        await self._index_now()
        return existed

    def set_aside(self) -> list[SetAside]:
        """What people took out of the views (``backends.protocol.Restores``): the journal's."""
        return self._files.set_aside()

    async def restore(self, episode_id: str) -> Episode | None:
        restored = await self._files.restore(episode_id)
        if restored is not None:
            await self._index_now()
        return restored

    async def _index_now(self) -> bool:
        """Bring the graph up to the journal now, if this process holds it; True when it did."""
        if self._graph is None or self._applied is None or self._outage.active:
            self._wake.set()
            return False
        async with self._lock:
            if self._graph is None or self._applied is None:
                return False
            try:
                await self._catch_up()
            except DualmemError as exc:
                self._fail(exc)
                return False
        return True

    # -- reads: the graph when it is current, else the journal's own index ------------------

    async def _reader(self) -> Graph | None:
        """The graph, brought up to the journal, when it can answer a read now; else None
        (the journal answers)."""
        if self._graph is None or self._applied is None:
            return None
        if self._outage.active or self._files.position().seq - self._applied.seq > INLINE_GAP:
            self._wake.set()
            return None
        async with self._lock:
            graph = self._graph
            if graph is None or self._applied is None:
                return None
            try:
                await self._catch_up()
            except DualmemError as exc:
                self._fail(exc)
                return None
            return graph

    async def get(self, episode_id: str) -> Episode | None:
        return await read_either(await self._reader(), self._files,
                                 lambda store: store.get(episode_id), self._fail)

    async def search(
        self,
        query: str,
        *,
        group_ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 10,
    ) -> list[Hit]:
        return await read_either(
            await self._reader(), self._files,
            lambda store: store.search(query, group_ids=group_ids, kinds=kinds, limit=limit),
            self._fail)

    async def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        async for episode in scan_either(await self._reader(), self._files, self._fail,
                                         group_ids=group_ids, kinds=kinds):
            yield episode

    async def count(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> int:
        return await read_either(await self._reader(), self._files,
                                 lambda store: store.count(group_ids=group_ids, kinds=kinds),
                                 self._fail)

    # -- keeping the graph equal to the journal (under self._lock) --------------------------

    async def _catch_up(self) -> None:
        """Apply the journal's changes since the graph's position; a position the journal does
        not know (a rebuilt index) makes the graph equal to the journal instead."""
        graph = self._graph
        assert graph is not None and self._applied is not None
        wrote = False
        while True:
            changes = self._files.changes_since(self._applied, limit=BATCH)
            if changes.reset:
                await self._make_equal()
                continue
            if not changes.written and not changes.deleted:
                if wrote:
                    await self._save_kept()
                return
            wrote = True
            found = [await self._files.get(episode_id) for episode_id in changes.written]
            written = [episode for episode in found if episode is not None]
            if written:
                await self._write_graph(written)
                if self._unsaved is not None:
                    self._unsaved.update(episode.id for episode in written)
            for episode_id in changes.deleted:
                await graph.delete(episode_id)
            if changes.deleted:
                await self._files.forget_tombstones(changes.deleted)
            self._applied = changes.position

    async def _write_graph(self, episodes: Sequence[Episode]) -> None:
        """Write these into the graph. One the graph refuses (a body over its limit, written by
        hand into the journal) is skipped and kept for status, never in the way of the rest."""
        graph = self._graph
        assert graph is not None
        try:
            await upsert_all(graph, episodes)
        except InvalidEpisode:
            for episode in episodes:
                try:
                    await graph.upsert(episode)
                except InvalidEpisode as exc:
                    self._skipped[episode.id] = (episode.group_id, str(exc))
                    continue
                self._skipped.pop(episode.id, None)
            return
        for episode in episodes:
            self._skipped.pop(episode.id, None)

    async def _take_over(self) -> None:
        """Bring a newly held graph up to the journal, as cheaply as its recorded position
        allows, and check it against the journal's count."""
        graph = self._graph
        assert graph is not None
        self._applied = await graph.applied(self._files.position().epoch)
        if self._applied is None:
            await self._make_equal()
            await self._restore_kept()
        else:
            await self._catch_up()
            # A shared graph holds other homes' memories too: its count says nothing.
            if not graph.shared and (await graph.count() + len(self._skipped)
                                     != await self._files.count()):
                await self._make_equal()
                await self._restore_kept()
        await self._save_kept()
        await self._record()
        self._why = self._held_why()

    def _held_why(self) -> str:
        return self._holding if self._rebuilt is None else f"{self._holding}; {self._rebuilt}"

    async def _quick_to_take_over(self) -> bool:
        """Taking the graph over now costs little: few changes since its position, or a small
        journal. Otherwise it happens in the background while the files answer."""
        if self._graph is None:
            return False
        position = self._files.position()
        applied = await self._graph.applied(position.epoch)
        if applied is not None and applied.epoch == position.epoch:
            return 0 <= position.seq - applied.seq <= INLINE_GAP
        return await self._files.count() <= INLINE_GAP

    async def _make_equal(self) -> Verdict:
        """Make the graph hold exactly the journal: write what it lacks or holds otherwise,
        delete what the journal records as deleted. A memory only the graph holds (written
        before the journal existed, or by ``--backend graph``) is never lost: it joins the
        journal first, unless the journal records its deletion. A graph that follows the
        journal (``graphs.follows_a_journal``) holds nothing the journal did not give it: what
        the journal lacks was deleted from it (an episode file deleted by hand, its index
        deleted since, which forgot it), and leaves the graph. A shared graph (a server) holds
        other homes' memories: they neither join this journal nor leave the graph."""
        graph = self._graph
        assert graph is not None
        self._unsaved = None  # it writes past _catch_up's count: the next save reads everything
        position = self._files.position()
        journal = self._files.content_hashes()
        deleted = self._files.deleted_ids()
        stored = {episode.id: episode async for episode in graph.scan()}
        alone = not graph.shared and not graphs.follows_a_journal(
            await graph.applied(position.epoch))
        joining = [episode for key, episode in stored.items()
                   if key not in journal and key not in deleted] if alone else []
        for start in range(0, len(joining), BATCH):
            await self._files.upsert_many(joining[start : start + BATCH])
        journal.update((episode.id, episode.content_hash()) for episode in joining)
        await self._check_joined(joining)
        hashes = {key: episode.content_hash() for key, episode in stored.items()}
        writes = [key for key, digest in journal.items() if hashes.get(key) != digest]
        for start in range(0, len(writes), BATCH):
            batch = [await self._files.get(key) for key in writes[start : start + BATCH]]
            await self._write_graph([episode for episode in batch if episode is not None])
        removed = sorted(hashes.keys() & deleted if graph.shared
                         else hashes.keys() - journal.keys())
        for key in removed:
            await graph.delete(key)
        self._applied = position
        verdict = Verdict(len(writes), len(removed), len(joining))
        if verdict.changed:
            self._unreported = Verdict(*(a + b for a, b in zip(self._unreported, verdict,
                                                               strict=True)))
            _log().info("graph made equal to the journal: %s", verdict)
            await graph.refresh_graphiti_indexes()  # after bulk writes, not after each
        return verdict

    async def _save_kept(self) -> None:
        """Append what the graph holds and the journal cannot give it again (``kept_log``) to
        the files beside the journal, which a rebuilt graph gets it back from. A disk that
        refuses costs nothing yet: the graph keeps it, and the next save tries again."""
        try:
            if await self._save_enrichments():
                self._unsaved = None  # graphiti's extraction may retire any memory's facts
            await self._save_history()
        except WriteFailed as exc:
            _log().warning("%s", exc)

    async def _save_history(self) -> None:
        """The facts the graph retired since: those of the memories written since, or, after
        a take-over or an enrichment, every one not saved yet (a write reads a write's worth
        of history, not all of it); and those saved retired that such a memory states again,
        as stated (``expired_at`` None: the file's latest line for a fact is what it is)."""
        from backends.graph.history import KeptFact, latest
        from memory.store import kept_log

        graph = self._graph
        assert graph is not None
        path = self._files.history_file
        if self._saved is None:
            self._saved = latest(kept_log.read(path, KeptFact.from_json))
        saved, written = self._saved, self._unsaved
        if written is not None and not written:
            return
        found = await graph.retired_facts(written)
        # Of this journal's memories only: a server's graph holds other homes' too.
        fresh = [fact for fact in found if _current(saved.get(fact.uuid))
                 and await self._files.get(fact.episode)]
        # A fact saved retired that its memory, written since, states again: a rewrite back
        # to the content graphiti's extraction had contradicted it at must not retire it again.
        retired = {fact.uuid for fact in found}
        fresh += [replace(fact, expired_at=None) for fact in saved.values()
                  if not _current(fact) and fact.uuid not in retired
                  and (written is None or fact.episode in written)
                  and await self._files.get(fact.episode)]
        kept_log.append(path, fresh)
        saved.update((fact.uuid, fact) for fact in fresh)
        self._unsaved = set()

    async def _save_enrichments(self) -> bool:
        """What graphiti's LLM extraction found since, of memories at their content now; True
        when it found any (of this home's memories or, on a shared graph, another's)."""
        from backends.graph.history import Enrichment
        from memory.store import kept_log

        graph = self._graph
        assert graph is not None
        path = self._files.enriched_file
        if self._saved_enriched is None:
            self._saved_enriched = {item.episode: item.digest
                                    for item in kept_log.read(path, Enrichment.from_json)}
        saved = self._saved_enriched
        recorded = await graph.enriched()
        due = [key for key, digest in recorded.items() if saved.get(key) != digest]
        if not due:
            return False
        journal = self._files.content_hashes()
        fresh = await graph.enrichments(key for key in due if key in journal)
        kept_log.append(path, fresh)
        # Another home's memory (a shared graph) is not saved, and not looked at again.
        saved.update((key, recorded[key]) for key in due)
        return True

    async def _restore_kept(self) -> None:
        """Give a graph made from the journal the facts rewrites had retired, as they were,
        and what graphiti's extraction had found, without asking the LLM (what it already
        holds, or of memories gone or rewritten since, is left)."""
        from backends.graph.history import Enrichment, KeptFact, latest
        from memory.store import kept_log

        graph = self._graph
        assert graph is not None
        kept = latest(kept_log.read(self._files.history_file, KeptFact.from_json))
        facts = [fact for fact in kept.values() if not _current(fact)]
        if facts and (written := await graph.keep_history(facts)):
            _log().info("restored %d retired facts from %s", written, self._files.history_file)
        # The file's last line for a memory is its latest enrichment.
        found = {item.episode: item for item in kept_log.read(self._files.enriched_file,
                                                              Enrichment.from_json)}
        if found and (written := await graph.keep_enrichments(list(found.values()))):
            _log().info("restored the LLM's enrichment of %d memories from %s", written,
                        self._files.enriched_file)

    async def _check_joined(self, joined: Sequence[Episode]) -> None:
        """Every memory that joined the journal reads back equal (content hash)."""
        for episode in joined:
            copy = await self._files.get(episode.id)
            if copy is None or copy.content_hash() != episode.content_hash():
                raise MigrationError(f"{episode.id} did not reach the journal intact")

    async def _record(self) -> None:
        """Store the graph's position in the graph and beside it (for other processes' status)."""
        if self._graph is None or self._applied is None or self._applied == self._recorded:
            return
        await self._graph.record_applied(self._applied)
        self._recorded = self._applied
        with contextlib.suppress(OSError, FileRefused):  # a link: the graph has it anyway
            note = {"epoch": self._applied.epoch, "seq": self._applied.seq, "pid": os.getpid()}
            overwrite(self._graph_dir / APPLIED_FILE, orjson.dumps(note))

    def _fail(self, exc: DualmemError) -> None:
        """A graph failure is a reason to answer from the journal, not to lose a write: the
        journal already holds it, and the background catch-up tries again (the whole journal,
        into a server's graph that was emptied)."""
        if isinstance(exc, GraphEmptied):
            self._applied = None
            with contextlib.suppress(OSError):
                (self._graph_dir / APPLIED_FILE).unlink(missing_ok=True)
            self._rebuilt = f"the graph was emptied ({exc.detail}); the journal replayed into it"
        ongoing = self._outage.active
        self._outage.notice(exc)
        self._why = f"{self._holding}, but indexing failed (retrying): {exc}"
        if not (ongoing and self._outage.active):  # an outage is told once, not every retry
            _log().warning("graph indexing failed, will retry: %s", exc)
        self._wake.set()

    # -- status and lifecycle ---------------------------------------------------------------

    async def status(self) -> DualStatus:
        position = self._files.position()
        applied = self._applied or await self._asked_position(position.epoch) or \
            _recorded_position(self._graph_dir)
        if applied is None or applied.epoch != position.epoch:
            pending = await self._files.count()
        else:
            pending = max(0, position.seq - applied.seq) + len(self._skipped)
        return DualStatus(
            layer=self.layer_in_use,
            reason=self._why,
            pending=pending,
            skipped=tuple(f"{key} ({group}): {why}"
                          for key, (group, why) in sorted(self._skipped.items())),
            journal=await self._files.count(),
            last_migration=_last_migration(self._ledger_path),
            unreadable=tuple(f"{path}: {reason}" for path, reason in self.problems),
        )

    async def _asked_position(self, epoch: str) -> Position | None:
        """The position the graph records for this journal (a shared one: another process of
        this home may have brought it further than this one knows), if it answers."""
        if self._graph is None or not self._graph.shared or self._outage.active:
            return None
        try:
            return await self._graph.applied(epoch)
        except DualmemError:
            return None

    async def repair(self, *, graphiti_indexes: bool = False) -> Verdict:
        """Compare the whole graph with the journal and make it equal (only the holder can),
        and rebuild graphiti's full-text indexes if kept; ``graphiti_indexes`` builds them
        (to be kept from then on) for graphiti's own search. Returns what changed, this
        store's take-over included (it makes the graph equal first, when it must)."""
        async with self._lock:
            if self._graph is None:
                raise BackendUnavailable("graph", self._why)
            await self._make_equal()
            await self._catch_up()
            verdict, self._unreported = self._unreported, Verdict(0, 0, 0)
            if graphiti_indexes:
                await self._graph.build_graphiti_indexes()
            else:
                await self._graph.refresh_graphiti_indexes()
            await self._record()
            self._why = self._holding
            return verdict

    async def differences(self) -> Verdict:
        """How the graph differs from the journal now (all zero when equal); holder only."""
        async with self._lock:
            if self._graph is None:
                raise BackendUnavailable("graph", self._why)
            await self._catch_up()
            journal = self._files.content_hashes()
            stored = {e.id: e.content_hash() async for e in self._graph.scan()}
            return Verdict(
                written=sum(stored.get(key) != digest for key, digest in journal.items()),
                deleted=len(stored.keys() & self._files.deleted_ids() if self._graph.shared
                            else stored.keys() - journal.keys()),
                joined=0,
            )

    async def catch_up(self) -> None:
        """Bring the graph up to the journal now (only the holder can)."""
        async with self._lock:
            if self._graph is None:
                raise BackendUnavailable("graph", self._why)
            if self._applied is None:
                await self._take_over()
            else:
                await self._catch_up()
                await self._record()

    async def enrich(self, *, group_ids: Sequence[str] | None = None,
                     progress: Callable[[int, int], None] | None = None) -> Enriched:
        """``Enriches.enrich`` on the graph, brought up to the journal first (holder only)."""
        await self.catch_up()
        graph = self._graph
        if graph is None:
            raise BackendUnavailable("graph", self._why)
        if not isinstance(graph, Enriches):
            raise BackendUnavailable("graph", "no enrichment", type(graph).__name__)
        try:
            return await graph.enrich(group_ids=group_ids, progress=progress)
        finally:  # what was done before a failure is kept too
            async with self._lock:
                if self._graph is graph:
                    await self._save_kept()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Stop the supervisor before taking the lock it may be waiting for: awaiting it while
        # holding the lock deadlocks should a cancellation be lost (asyncio.wait_for in 3.11
        # can swallow one), so it also checks ``_closed`` and its wait is bounded.
        if self._task is None and self._graph is None:  # one-shot: nothing else ran
            await self._files.aclose()
            return
        if self._task is not None:
            import asyncio

            self._task.cancel()
            self._wake.set()
            await asyncio.wait({self._task}, timeout=CLOSE_WAIT)
        async with self._lock:
            try:
                if self._graph is not None:
                    if self._applied is not None:
                        with contextlib.suppress(DualmemError):
                            await self._catch_up()
                            await self._record()
                            await self._save_kept()  # the background enrichment's last
                    await self._graph.aclose()
            finally:
                self._graph = None
                await self._files.aclose()

    async def _try_graph(self) -> None:
        import asyncio

        from backends.graph.kuzu import salvage  # a one-shot store never tries the graph

        seen = salvage.identity(self._graph_dir)
        try:
            graph = await self._open_graph()
        except BackendUnavailable as exc:
            if exc.reason not in DAMAGED:
                self._why = f"graph layer {exc.reason}" + (f": {exc.detail}" if exc.detail else "")
                self._retry = exc.reason not in NEVER_RETRY
                if exc.reason != LOCKED:  # no holder to take in hand edits: do it here
                    await self._files.watch()
                return
            moved = await asyncio.to_thread(salvage.move_aside, self._graph_dir, seen)
            if moved is None:  # another process opened it, or moved it and made a new one
                self._why = (f"graph layer {exc.reason}: {exc.detail}; another process has "
                             f"the graph in hand, retrying")
                await self._files.watch()
                return
            self._rebuilt = (f"rebuilt from the journal: the damaged graph ({exc.detail}) "
                             f"is in {moved}")
            _log().warning("the graph was damaged (%s); moved to %s, rebuilding", exc.detail, moved)
            try:
                graph = await self._open_graph()
            except BackendUnavailable as again:
                self._why = (f"graph layer {again.reason}: {again.detail}; the journal serves "
                             f"every memory; once fixed, `dualmem repair` rebuilds the graph")
                await self._files.watch()
                return
        self._graph = graph
        self._applied = None
        self._unsaved = None
        self._why = f"{self._holding}; catching up with the journal"
        self._watch()
        await self._files.watch()
        self._wake.set()

    async def _supervise(self) -> None:
        import asyncio

        from backends.graph import owner_pid  # its module runs the graph's threads: asyncio

        delay = RETRY_FIRST
        tried = time.monotonic()
        while self._graph is None:
            if not self._retry or self._closed:
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX)
            # Opening Kùzu only to hear that it is locked costs a tenth of a second of CPU: while
            # its holder lives, that is known without it (and checked by opening now and then,
            # should the note lie). A killed holder is replaced within RETRY_MAX.
            holder = owner_pid(self._graph_dir)
            if holder not in (None, os.getpid()) and time.monotonic() - tried < RETRY_LIVE:
                continue
            tried = time.monotonic()
            async with self._lock:
                if self._closed:
                    return
                await self._try_graph()
        delay = RETRY_FIRST
        while not self._closed:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(SWEEP):
                    await self._wake.wait()
            self._wake.clear()
            if self._closed:
                return
            await asyncio.sleep(DEBOUNCE)
            try:
                if self._outage.active and self._graph is not None:
                    await self._outage.probe(self._graph, self._files.position().epoch)
                await self.catch_up()
                self._why = self._held_why()  # a failure before, if any, is over
                delay = RETRY_FIRST
            except DualmemError as exc:
                self._fail(exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)

    def _watch(self) -> None:
        """Catch up whenever the file layer has taken in a change (another process's write)."""
        import asyncio

        loop = asyncio.get_running_loop()
        wake = self._wake  # made here, in the loop's thread, not by the watcher's

        def changed() -> None:
            # The loop may be gone if the store was never closed: nothing to tell.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(wake.set)

        self._files.subscribe(changed)


async def open_dual(config: Config, *, one_shot: bool = False,
                    embedder: AnyEmbedder | None = None) -> DualBackend:
    """The dual store of ``config.home``: its file journal, and its graph when this process can
    hold it (its vectors made by ``embedder``, else the configured one); a ``one_shot``
    command takes neither the graph nor a watcher. The journal is watched by the graph's
    holder (or by everyone while nobody can hold it)."""
    files = await FileBackend.open(config.files_dir, max_body_bytes=config.max_body_bytes,
                                   watch=False)

    chosen = embedder or (None if one_shot else embedder_for(config))
    llm = None if one_shot else llm_for(config)  # the holder enriches in the background

    async def open_graph() -> Graph:
        return await graphs.open_graph(config, embedder=chosen, llm=llm)

    # The position a server's graph was brought up to is noted beside this home's copy of its
    # index (one per server graph), not beside the embedded graph: status reads it when the
    # server does not answer.
    noted = graphs.index_folder(config) or config.graph_dir
    if config.graph_url is not None and not one_shot:
        with contextlib.suppress(OSError):
            noted.mkdir(parents=True, exist_ok=True)
    try:
        return await DualBackend.open(files, open_graph, noted, config.ledger_file,
                                      hold_graph=not one_shot)
    except BaseException:
        await files.aclose()
        raise


def _current(line: KeptFact | None) -> bool:
    """Whether the history file's latest line for a fact leaves it current: there is none, or
    it says the fact was stated again."""
    return line is None or line.expired_at is None


def _recorded_position(graph_dir: Path) -> Position | None:
    """The graph's position as its holder last wrote it beside the database."""
    try:
        # Bounded, regular only: a FIFO planted there hung `status`.
        note = orjson.loads(read_regular(graph_dir / APPLIED_FILE, limit=NOTE_LIMIT,
                                         follow=False))
        return Position(str(note["epoch"]), int(note["seq"]))
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def _last_migration(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    from migrate import FILES_TO_GRAPH, Ledger  # status only: the migrator is no read's cost

    try:
        ledger = Ledger.open(path)
    except MigrationError:
        return None
    try:
        return ledger.last_run(FILES_TO_GRAPH)
    finally:
        ledger.close()


