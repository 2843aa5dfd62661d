"""The dual store: the graph when this process holds it, the file layer otherwise, one memory.

Kùzu admits one read-write process per database. The process that opens it (the holder) writes
there, watches the file layer and replays into the graph what other processes wrote to files
while it held the lock. Every other process writes to the file layer, marked pending, keeps its
deletes as tombstones, and retries the graph with backoff so that it takes over when the holder
exits. Any number of processes write; the graph converges.

While pending file memory exists, reads consult both layers and merge them by id; the pending
file copy is the newer one (it has not reached the graph yet), otherwise the graph's copy wins.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from backends.errors import BackendUnavailable, DualmemError, StoreCorrupt, WriteFailed
from backends.graph import GraphBackend
from backends.model import Episode, Hit, Receipt
from backends.protocol import MemoryBackend, upsert_all
from fallback import FileBackend
from memory.config import Config
from migrate import FILES_TO_GRAPH, Ledger, Migrator, make_plan

log = logging.getLogger(__name__)
_T = TypeVar("_T")

GraphOpener = Callable[[], Awaitable[MemoryBackend]]
"""Opens the graph layer or raises ``BackendUnavailable`` with the reason."""

RETRY_FIRST = 0.2
RETRY_MAX = 2.0
DEBOUNCE = 0.1
SWEEP = 5.0
"""seconds between replays when no change is seen, for changes a watcher can miss"""
NEVER_RETRY = frozenset({"not installed"})
HOLDING = "this process holds the graph"
# A failing graph is a reason to fall back for this write, not to give up the lock.
_LAYER_FAILURES = (WriteFailed, BackendUnavailable, StoreCorrupt)


@dataclass(frozen=True)
class DualStatus:
    """Where writes go now and why, what waits for the graph, the last migration's result."""

    layer: str
    reason: str
    pending: dict[str, int]
    """file episodes not yet in the graph, per group"""
    pending_deletes: int
    last_migration: dict[str, Any] | None
    unreadable: tuple[str, ...]

    @property
    def pending_total(self) -> int:
        return sum(self.pending.values()) + self.pending_deletes

    def to_json(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "reason": self.reason,
            "pending": self.pending,
            "pending_deletes": self.pending_deletes,
            "pending_total": self.pending_total,
            "last_migration": self.last_migration,
            "unreadable": list(self.unreadable),
        }

    def describe(self) -> str:
        waiting = ", ".join(f"{group}: {n}" for group, n in self.pending.items()) or "none"
        lines = [
            f"pending for the graph: {sum(self.pending.values())} episode(s) ({waiting}), "
            f"{self.pending_deletes} delete(s)"
        ]
        last = self.last_migration
        if last is None:
            lines.append("last migration: none")
        else:
            verdict = "ok" if last["ok"] else "FAILED verification"
            lines.append(
                f"last migration: {last['started_at']}, wrote {last['written']}, "
                f"deleted {last['deleted']}, {verdict}"
            )
        return "\n".join(lines)


class DualBackend:
    """A ``MemoryBackend`` over the graph and file layers; open with ``DualBackend.open``."""

    layer = "dual"

    def __init__(self, files: FileBackend, ledger: Ledger, open_graph: GraphOpener):
        self._files = files
        self._ledger = ledger
        self._open_graph = open_graph
        self._graph: MemoryBackend | None = None
        self._migrator: Migrator | None = None
        self._why = "not opened yet"
        self._retry = True
        # Set when pending file memory may exist; cleared when a replay begins.
        self._dirty = asyncio.Event()
        # Serializes every use of the graph (writes, replays, opening and closing it), so a
        # replay never interleaves with a write or delete of the same episode.
        self._lock = asyncio.Lock()
        self._view: tuple[int, _Pending] | None = None
        self._hashes: dict[str, tuple[Episode, str]] = {}
        self._version = 0
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @classmethod
    async def open(
        cls, files: FileBackend, ledger_path: Path, open_graph: GraphOpener
    ) -> DualBackend:
        """Take ``files`` (closed with the store) and try the graph once; in the background,
        replay pending file memory when holding the graph, or keep retrying it otherwise."""
        store = cls(files, Ledger.open(ledger_path), open_graph)
        async with store._lock:
            await store._try_graph()
        store._task = asyncio.create_task(store._supervise(), name="dualmem-dual")
        return store

    @property
    def holds_graph(self) -> bool:
        return self._graph is not None

    @property
    def layer_in_use(self) -> str:
        """Where writes go now: ``graph`` or ``file``."""
        return "graph" if self._graph is not None else "file"

    @property
    def reason(self) -> str:
        return self._why

    @property
    def problems(self) -> list[tuple[Path, str]]:
        """Files the file layer could not read (shown by ``dualmem status``)."""
        return self._files.problems

    # -- writes ---------------------------------------------------------------------------

    async def upsert(self, episode: Episode) -> Receipt:
        return (await self.upsert_many([episode]))[0]

    async def upsert_many(self, episodes: Sequence[Episode]) -> list[Receipt]:
        """``upsert`` of each: in one graph transaction when this process holds the graph, else
        in one file-layer batch, marked pending."""
        if self._graph is not None:
            async with self._lock:
                receipts = await self._graph_write(upsert_all(self._graph, episodes))
                if receipts is not None:
                    await self._mirror(episodes)
                    return receipts
        try:
            receipts = await upsert_all(self._files, episodes)
        except WriteFailed as exc:
            ids = ", ".join(episode.id for episode in episodes[:3])
            more = f" and {len(episodes) - 3} more" if len(episodes) > 3 else ""
            raise WriteFailed(f"no layer could store {ids}{more}: {self._why}; {exc}") from exc
        self._changed()
        return [receipt.model_copy(update={"pending": True}) for receipt in receipts]

    async def delete(self, episode_id: str) -> bool:
        if self._graph is not None:
            async with self._lock:
                existed = await self._graph_write(self._graph.delete(episode_id))
                if existed is not None:
                    # The file copy goes too, and its tombstone with it: a later write of the
                    # same id must not meet an old delete.
                    in_files = await self._files.delete(episode_id)
                    if in_files:
                        await self._files.forget_tombstones([episode_id])
                    return existed or in_files
        existed = await self._files.delete(episode_id)
        if not existed:
            # The graph may hold it: the delete must reach it later.
            await self._files.bury([episode_id])
        self._changed()
        return existed

    async def _graph_write(self, write: Awaitable[_T]) -> _T | None:
        """The result of a graph write, or None when the graph failed (the caller falls back)."""
        try:
            done = await write
        except _LAYER_FAILURES as exc:
            self._why = f"graph write failed: {exc}"
            return None
        self._why = HOLDING
        return done

    async def _mirror(self, episodes: Sequence[Episode]) -> None:
        """Keep the file copies of graph-written episodes current, so that readers that cannot
        open the graph, and the verification of migrations, never meet a stale one."""
        stale = [e for e in episodes if (copy := await self._files.get(e.id)) and copy != e]
        if not stale:
            return
        with contextlib.suppress(WriteFailed):
            await self._files.upsert_many(stale)
            self._ledger.record(
                FILES_TO_GRAPH, [(e.id, e.group_id, e.content_hash()) for e in stale]
            )

    # -- reads ----------------------------------------------------------------------------

    async def get(self, episode_id: str) -> Episode | None:
        if self._graph is None:
            return await self._files.get(episode_id)
        found = await self._graph.get(episode_id)
        if not self._dirty.is_set():
            return found
        pending = await self._pending_view()
        if episode_id in pending.deleted:
            return None
        return pending.episodes.get(episode_id, found)

    async def search(
        self,
        query: str,
        *,
        group_ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 10,
    ) -> list[Hit]:
        if self._graph is None:
            return await self._files.search(query, group_ids=group_ids, kinds=kinds, limit=limit)
        hits = await self._graph.search(query, group_ids=group_ids, kinds=kinds, limit=limit)
        if not self._dirty.is_set():
            return hits
        pending = await self._pending_view()
        file_hits = await self._files.search(query, group_ids=group_ids, kinds=kinds, limit=limit)
        # A pending copy supersedes the graph's, matching or not; a pending delete hides it.
        merged = {h.episode.id: h for h in hits if not pending.covers(h.episode.id)}
        for hit in file_hits:  # a file hit is never pending deletion: the files hold it
            if hit.episode.id in pending.episodes or hit.episode.id not in merged:
                merged[hit.episode.id] = hit
        return sorted(merged.values(), key=lambda h: (-h.score, h.episode.id))[:limit]

    async def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        if self._graph is None:
            async for episode in self._files.scan(group_ids=group_ids, kinds=kinds):
                yield episode
            return
        if not self._dirty.is_set():
            async for episode in self._graph.scan(group_ids=group_ids, kinds=kinds):
                yield episode
            return
        for episode in await self._merged(group_ids, kinds):
            yield episode

    async def count(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> int:
        if self._graph is None:
            return await self._files.count(group_ids=group_ids, kinds=kinds)
        total = await self._graph.count(group_ids=group_ids, kinds=kinds)
        if not self._dirty.is_set():
            return total
        pending = await self._pending_view()
        for episode_id in pending.episodes.keys() | pending.deleted:
            old = await self._graph.get(episode_id)
            new = pending.episodes.get(episode_id)
            total += _matches(new, group_ids, kinds) - _matches(old, group_ids, kinds)
        return total

    async def _merged(
        self, group_ids: Sequence[str] | None, kinds: Sequence[str] | None
    ) -> list[Episode]:
        assert self._graph is not None
        pending = await self._pending_view()
        chosen = {
            e.id: e
            async for e in self._graph.scan(group_ids=group_ids, kinds=kinds)
            if not pending.covers(e.id)
        }
        for episode in pending.episodes.values():
            if _matches(episode, group_ids, kinds):
                chosen[episode.id] = episode
        return sorted(chosen.values(), key=lambda e: (e.created_at, e.id))

    async def _pending_view(self) -> _Pending:
        if self._view is None or self._view[0] != self._version:
            version = self._version
            plan = await make_plan(self._files, self._ledger, hashes=self._hashes)
            self._view = version, _Pending({e.id: e for e in plan.writes}, frozenset(plan.deletes))
        return self._view[1]

    def _changed(self) -> None:
        self._version += 1
        self._dirty.set()

    # -- status and lifecycle -------------------------------------------------------------

    async def status(self) -> DualStatus:
        plan = await make_plan(self._files, self._ledger, hashes=self._hashes)
        return DualStatus(
            layer=self.layer_in_use,
            reason=self._why,
            pending=dict(sorted(plan.pending_by_group().items())),
            pending_deletes=len(plan.deletes),
            last_migration=self._ledger.last_run(FILES_TO_GRAPH),
            unreadable=tuple(f"{path}: {reason}" for path, reason in self.problems),
        )

    async def replay(self) -> None:
        """Replay pending file memory into the graph now (only the holder can)."""
        async with self._lock:
            await self._replay()

    async def _replay(self) -> None:
        if self._migrator is None:
            raise BackendUnavailable("graph", self._why)
        self._dirty.clear()
        try:
            report = await self._migrator.run(check=False)
        except DualmemError:
            self._dirty.set()
            raise
        finally:
            self._version += 1
        if report.written or report.deleted:
            log.info("replayed into the graph: %s", report.summary())

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        async with self._lock:
            # Holding the lock, the supervisor is between graph operations: safe to stop.
            if self._task is not None:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
            try:
                if self._graph is not None:
                    if self._dirty.is_set():
                        with contextlib.suppress(DualmemError):
                            await self._replay()
                    await self._graph.aclose()
            finally:
                self._graph = None
                await self._files.aclose()
                self._ledger.close()

    async def _try_graph(self) -> None:
        try:
            graph = await self._open_graph()
        except BackendUnavailable as exc:
            self._why = f"graph layer {exc.reason}" + (f": {exc.detail}" if exc.detail else "")
            self._retry = exc.reason not in NEVER_RETRY
            return
        self._graph = graph
        self._migrator = Migrator(self._files, graph, self._ledger, hashes=self._hashes)
        self._why = HOLDING
        self._changed()  # whatever others wrote meanwhile is replayed first
        self._watch()

    async def _supervise(self) -> None:
        delay = RETRY_FIRST
        while self._graph is None:
            if not self._retry:
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX)
            async with self._lock:
                await self._try_graph()
        delay = RETRY_FIRST
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._dirty.wait(), SWEEP)
            await asyncio.sleep(DEBOUNCE)
            try:
                await self.replay()
                delay = RETRY_FIRST
            except DualmemError as exc:
                log.warning("replay into the graph failed, will retry: %s", exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)

    def _watch(self) -> None:
        """Replay whenever the file layer has taken in a change (another process's write)."""
        loop = asyncio.get_running_loop()

        def changed() -> None:
            # The loop may be gone if the store was never closed: nothing to tell.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._changed)

        self._files.subscribe(changed)


async def open_dual(config: Config) -> DualBackend:
    """The dual store of ``config.home``: its file layer, its graph when this process can hold
    it, and the migration ledger beside them."""
    files = await FileBackend.open(config.files_dir, max_body_bytes=config.max_body_bytes)

    async def open_graph() -> MemoryBackend:
        return await GraphBackend.open(config.graph_dir, max_body_bytes=config.max_body_bytes)

    try:
        return await DualBackend.open(files, ledger_path(config), open_graph)
    except BaseException:
        await files.aclose()
        raise


def ledger_path(config: Config) -> Path:
    return config.home / "migration" / "ledger.sqlite3"


def _matches(
    episode: Episode | None, group_ids: Sequence[str] | None, kinds: Sequence[str] | None
) -> bool:
    return (
        episode is not None
        and (group_ids is None or episode.group_id in group_ids)
        and (kinds is None or episode.kind in kinds)
    )


@dataclass(frozen=True)
class _Pending:
    """File memory the graph has not seen yet: new or changed episodes, and deletes."""

    episodes: dict[str, Episode]
    deleted: frozenset[str]

    def covers(self, episode_id: str) -> bool:
        """The graph's copy of this id is out of date."""
        return episode_id in self.episodes or episode_id in self.deleted
