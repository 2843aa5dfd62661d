"""A one-shot command's view of a team's graph server (``auto`` with a graph URL): the team's
memories, and this home's own changes the server has not taken in yet.

A search or a hook must answer in a fraction of a second, and opening the graph layer on a
server (graphiti's driver, and a search index of the whole graph) takes seconds. So the home
keeps a copy of the server graph's memories in a file-layer index (``<home>/server-index/
<address digest>/team/``, a derived cache: delete it at any time), brought up to the server's
change feed at each one-shot open over a plain socket (``falkor_wire``), and read like the
journal (the same ranking). The journal's changes since the position this home's last holder
recorded on the server are pending: those are read from the journal, the rest from the copy.
The journal is read through its index alone (``TeamJournal``) until a write needs the file layer.

A server that does not answer within the wire's deadlines leaves the journal to answer alone
(every memory this home wrote), and ``notice`` says why, for the command to print.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

from backends import json_read
from backends.errors import BackendUnavailable, FileRefused, StoreCorrupt
from backends.flock import flocked
from backends.graph.address import ServerAddress
from backends.graph.falkor.queries import CHANGED_KEYS as _CHANGED
from backends.graph.falkor.queries import EPISODES as _EVERY
from backends.graph.falkor.queries import EPISODES_BY_KEYS as _SOME
from backends.graph.falkor.queries import TEAM_HEAD as _HEAD
from backends.graph.falkor.rows import episode_of
from backends.graph.falkor.wire import WireClient
from backends.model import Episode, Hit, Receipt
from backends.protocol import Position, upsert_all
from backends.safe_files import open_for_write, read_regular
from fallback.index import FileIndex, Row, time_key
from fallback.index_search import as_set, search_index
from memory.store.team_journal import TeamJournal

FOLDER = "team"
NOTE = "server.json"
BATCH = 500
FETCH = 256
"""episodes fetched per query: the ids go into the query's text"""


# Plain classes, not dataclasses: making these two cost a one-shot read 5.6 M instructions
# (~3 ms of CPU; a dataclass compiles its methods at import).
class _Note:
    def __init__(self, instance: str, seen: int) -> None:
        self.instance = instance
        """the server graph's instance the copy is of (another one: it was emptied since)"""
        self.seen = seen
        """the change counter up to which the copy holds every change"""


class TeamView:
    """A ``MemoryBackend`` for one command: reads as described above, writes to the journal
    (pending: the next process to hold the graph replays them into it). Open with
    ``open_team_view``."""

    layer = "dual"

    def __init__(self, journal: TeamJournal, copy: FileIndex | None, pending: Pending,
                 why: str) -> None:
        self._journal = journal
        self._copy = copy
        self._pending = pending
        self.reason = why
        self.notice = None if copy is not None else why
        """what the command should tell its user: the team's memory was not read"""

    @property
    def layer_in_use(self) -> str:
        return "graph" if self._copy is not None else "file"

    # -- writes: the journal -----------------------------------------------------------------

    async def upsert(self, episode: Episode) -> Receipt:
        return (await self.upsert_many([episode]))[0]

    async def upsert_many(self, episodes: Sequence[Episode]) -> list[Receipt]:
        receipts = await upsert_all(await self._journal.files(), episodes)
        self._pending.written.update(episode.id for episode in episodes)
        self._pending.deleted.difference_update(episode.id for episode in episodes)
        return [receipt.model_copy(update={"layer": "file", "pending": True})
                for receipt in receipts]

    async def delete(self, episode_id: str) -> bool:
        existed = await (await self._journal.files()).delete(episode_id)
        self._pending.written.discard(episode_id)
        self._pending.deleted.add(episode_id)
        return existed

    # -- reads: the copy, and the journal for what is pending --------------------------------

    async def get(self, episode_id: str) -> Episode | None:
        if self._copy is None:
            return await (await self._journal.files()).get(episode_id)
        if episode_id in self._pending:
            return await self._journal.get(episode_id)
        return self._copy.get(episode_id)

    async def search(self, query: str, *, group_ids: Sequence[str] | None = None,
                     kinds: Sequence[str] | None = None, limit: int = 10) -> list[Hit]:
        if self._copy is None:
            return await (await self._journal.files()).search(
                query, group_ids=group_ids, kinds=kinds, limit=limit)
        team = search_index(self._copy, query, group_ids=group_ids, kinds=kinds, limit=limit,
                            layer="graph")
        hits = [hit for hit in team if hit.episode.id not in self._pending]
        if self._pending.written:
            # The journal's best include every pending memory the team's best would not
            # outrank: both are ranked by the same code.
            mine = await self._journal.search(query, group_ids=group_ids, kinds=kinds,
                                              limit=limit)
            hits += [hit for hit in mine if hit.episode.id in self._pending.written]
        hits.sort(key=lambda hit: -hit.score)
        return hits[:limit]

    async def scan(self, *, group_ids: Sequence[str] | None = None,
                   kinds: Sequence[str] | None = None) -> AsyncIterator[Episode]:
        async for episode in self._in_order(group_ids, kinds, newest_first=False):
            yield episode

    def newest(self, *, group_ids: Sequence[str] | None = None,
               kinds: Sequence[str] | None = None) -> AsyncIterator[Episode]:
        """``backends.protocol.ReadsNewest``: ``scan``'s order, reversed."""
        return self._in_order(group_ids, kinds, newest_first=True)

    async def _in_order(self, group_ids: Sequence[str] | None, kinds: Sequence[str] | None,
                        newest_first: bool) -> AsyncIterator[Episode]:
        """The copy's index merged with what is pending, by ``_order`` (or its reverse)."""
        if self._copy is None:
            files = await self._journal.files()
            read = files.newest if newest_first else files.scan
            async for episode in read(group_ids=group_ids, kinds=kinds):
                yield episode
            return
        team = (episode for episode in self._copy.select(as_set(group_ids), as_set(kinds),
                                                         newest_first=newest_first)
                if episode.id not in self._pending)
        mine = sorted(await self._pending_episodes(group_ids, kinds), key=_order,
                      reverse=newest_first)
        for episode in heapq.merge(team, mine, key=_order, reverse=newest_first):
            yield episode

    async def count(self, *, group_ids: Sequence[str] | None = None,
                    kinds: Sequence[str] | None = None) -> int:
        if self._copy is None:
            return await (await self._journal.files()).count(group_ids=group_ids, kinds=kinds)
        copied = [self._copy.get(key) for key in self._pending.written | self._pending.deleted]
        overlap = sum(1 for episode in copied
                      if episode is not None and _matches(episode, group_ids, kinds))
        mine = await self._pending_episodes(group_ids, kinds)
        return self._copy.count(as_set(group_ids), as_set(kinds)) - overlap + len(mine)

    async def _pending_episodes(self, group_ids: Sequence[str] | None,
                                kinds: Sequence[str] | None) -> list[Episode]:
        found = [await self._journal.get(key) for key in self._pending.written]
        return [episode for episode in found
                if episode is not None and _matches(episode, group_ids, kinds)]

    async def aclose(self) -> None:
        if self._copy is not None:
            self._copy.close()
            self._copy = None
        await self._journal.aclose()


class Pending:
    """This home's changes the server has not taken in yet."""

    def __init__(self) -> None:
        self.written: set[str] = set()
        self.deleted: set[str] = set()

    def __contains__(self, key: object) -> bool:
        return key in self.written or key in self.deleted


async def open_team_view(journal: TeamJournal, address: ServerAddress, index_folder: Path
                         ) -> TeamView:
    """Read the server (the copy kept under ``index_folder`` brought up to it) if it answers
    in time, else the journal alone, saying why. Takes ``journal`` (closed with the view)."""
    folder = index_folder / FOLDER
    try:
        with WireClient(address) as client:
            head = client.query(_HEAD, journal=f"journal:{journal.position().epoch}")
            copy = _synced(client, folder, head[0] if head else {})
    except BackendUnavailable as exc:
        return await _alone(journal, f"the graph server did not answer ({exc.detail}): this "
                            "home's journal answered alone")
    except (OSError, sqlite3.Error, ValueError, StoreCorrupt, FileRefused) as exc:
        # A home that cannot keep the copy, or a row that is no episode: still an answer.
        return await _alone(journal, f"the team's memory could not be copied to {folder} "
                            f"({exc}): this home's journal answered alone")
    applied = head[0].get("applied") if head else None
    pending = _pending(journal, None if applied is None or head[0].get("instance") is None
                       else Position(journal.position().epoch, int(str(applied))))
    return TeamView(journal, copy, pending, f"the team's memory on {address}")


async def _alone(journal: TeamJournal, why: str) -> TeamView:
    """The journal answering alone: the file layer itself (its open takes in what changed on
    disk)."""
    await journal.files()
    return TeamView(journal, None, Pending(), why)


def _pending(journal: TeamJournal, applied: Position | None) -> Pending:
    """The journal's changes since ``applied`` (None: every memory it holds)."""
    pending = Pending()
    position = applied
    while True:
        changes = journal.changes_since(position)
        if changes.reset:
            return _pending(journal, None)
        if not changes.written and not changes.deleted:
            return pending
        pending.written.update(changes.written)
        pending.deleted.difference_update(changes.written)
        pending.deleted.update(changes.deleted)
        pending.written.difference_update(changes.deleted)
        position = changes.position


def _synced(client: WireClient, folder: Path, head: Mapping[str, object]) -> FileIndex:
    """The copy in ``folder``, brought up to the server's graph (one process at a time)."""
    folder.mkdir(parents=True, exist_ok=True)
    with flocked(folder.parent):  # not the folder: FileIndex.open takes that one itself
        note = _read_note(folder / NOTE)
        instance, counter = head.get("instance"), int(str(head.get("seq") or 0))
        if instance is None:  # a graph never written, or emptied and not prepared yet
            return _fresh(folder)
        if note is None or note.instance != instance or note.seen > counter:
            copy = _fresh(folder)
            _put(copy, [episode_of(row) for row in client.query(_EVERY)], [])
            _write_note(folder / NOTE, _Note(str(instance), counter))
            return copy
        copy, _ = FileIndex.open(folder)
        changed = client.query(_CHANGED, since=note.seen)
        if changed:
            keys = list(dict.fromkeys(str(row["uuid"]) for row in changed))
            found: dict[str, Episode] = {}
            for start in range(0, len(keys), FETCH):
                rows = client.query(_SOME, keys=keys[start : start + FETCH])
                found.update((str(row["uuid"]), episode_of(row)) for row in rows)
            _put(copy, list(found.values()), [key for key in keys if key not in found])
            seen = max(note.seen, *(int(str(row["seq"])) for row in changed))
            _write_note(folder / NOTE, _Note(note.instance, seen))
        return copy


def _fresh(folder: Path) -> FileIndex:
    """An empty copy in ``folder`` (its note gone first: a copy half made is never used)."""
    (folder / NOTE).unlink(missing_ok=True)
    for name in ("index.sqlite3", "index.sqlite3-wal", "index.sqlite3-shm"):
        (folder / name).unlink(missing_ok=True)
    copy, _ = FileIndex.open(folder)
    return copy


def _put(copy: FileIndex, episodes: Sequence[Episode], gone: Sequence[str]) -> None:
    for start in range(0, len(episodes), BATCH):
        copy.put([Row(episode, "", episode.content_hash(), None, False, False)
                  for episode in episodes[start : start + BATCH]])
    if gone:
        copy.drop(gone)


def _read_note(path: Path) -> _Note | None:
    try:
        raw = json_read.loads(read_regular(path, limit=4096, follow=False))
        return _Note(str(raw["instance"]), int(raw["seen"]))
    except (FileNotFoundError, FileRefused, json_read.JSONDecodeError, KeyError, TypeError,
            ValueError):
        return None  # none, or damaged: the copy is made again


def _write_note(path: Path, note: _Note) -> None:
    part = path.with_name(f"{path.name}.part")
    with contextlib.suppress(FileNotFoundError):
        part.unlink()
    fd = open_for_write(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "wb") as out:
        # The standard library's: orjson's import (uuid, platform) would cost every read that
        # finds the server changed.
        out.write(json_read.dumps({"instance": note.instance, "seen": note.seen}).encode())
    os.replace(part, path)


def _order(episode: Episode) -> tuple[str, str]:
    """The order of ``FileIndex.select``."""
    return (time_key(episode.created_at), episode.id)


def _matches(episode: Episode, group_ids: Sequence[str] | None,
             kinds: Sequence[str] | None) -> bool:
    return ((group_ids is None or episode.group_id in group_ids)
            and (kinds is None or episode.kind in kinds))
