"""Taking over a home's graph and keeping it: open it (moving a damaged one aside), retry while
another process holds it, watch the journal for other processes' writes, and catch up in the
background through the ``Replayer``; a graph failure is a reason to answer from the journal.

asyncio is imported where a store holds the graph, or tries to: a one-shot process never
makes a holder, and the import is a fifth of its start-up.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from backends.errors import BackendUnavailable, DualmemError, GraphEmptied
from backends.graph.protocol import Graph
from fallback import FileBackend
from memory.store import damaged
from memory.store.kept_facts import KeptFacts
from memory.store.outage import Outage
from memory.store.replayer import INLINE_GAP, Replayer
from migrate.migrator import Progress

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger(__name__)

GraphOpener = Callable[[], Awaitable[Graph]]
"""Opens the graph layer or raises ``BackendUnavailable`` with the reason."""

RETRY_FIRST = 0.2
RETRY_MAX = 2.0
RETRY_LIVE = 30.0
"""seconds between attempts to open a graph whose holder is alive"""
DEBOUNCE = 0.05
SWEEP = 5.0
"""seconds between catch-ups when no change is seen, for changes a watcher can miss"""
NEVER_RETRY = frozenset({"not installed", "engine conflict", "another engine's database"})
LOCKED = "locked by another process"
DAMAGED = frozenset({"corrupt"})
HOLDING = "this process holds the graph"
SHARING = "this process writes the graph server directly"
CLOSE_WAIT = 30.0
"""seconds ``close`` waits for a supervisor in the middle of a graph write to stop"""


class Holder:
    """Holds the graph of ``files``' home when it can, and keeps it up to the journal."""

    def __init__(self, files: FileBackend, open_graph: GraphOpener, graph_dir: Path,
                 progress: Progress | None = None) -> None:
        self._files = files
        self._progress = progress
        self._open_graph = open_graph
        self._graph_dir = graph_dir
        self._kept = KeptFacts(files)
        self.replayer: Replayer | None = None
        """the graph's replay, once this process holds the graph"""
        self.why = "not opened yet"
        self.rebuilt: str | None = None
        """what became of a damaged (or emptied) graph, for status to tell"""
        self.outage = Outage()
        self._retry = True
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @cached_property
    def _lock(self) -> asyncio.Lock:
        """Serialises every use of the graph: catching up, opening and closing it."""
        import asyncio

        return asyncio.Lock()

    @cached_property
    def _wake(self) -> asyncio.Event:
        import asyncio

        return asyncio.Event()

    async def start(self) -> None:
        """Try the graph once (taking it over now if that is quick), then, in the background,
        bring it up to the journal when held, or keep retrying it otherwise."""
        import asyncio

        async with self._lock:
            await self._try_graph()
            replayer = self.replayer
            if replayer is not None and await replayer.quick_to_take_over():
                try:
                    await replayer.take_over()
                    self.why = self.held_why()
                except DualmemError as exc:
                    self.fail(exc)
        self._task = asyncio.create_task(self._supervise(), name="dualmem-dual")

    @property
    def current(self) -> Replayer | None:
        """The replay when the graph has caught up since take-over (it can answer reads)."""
        replayer = self.replayer
        return replayer if replayer is not None and replayer.applied is not None else None

    @property
    def holding(self) -> str:
        shared = self.replayer is not None and self.replayer.graph.shared
        return SHARING if shared else HOLDING

    def held_why(self) -> str:
        return self.holding if self.rebuilt is None else f"{self.holding}; {self.rebuilt}"

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[Replayer]:
        """The replay, under the lock; ``BackendUnavailable`` unless this process holds the
        graph."""
        async with self._lock:
            if self.replayer is None:
                raise BackendUnavailable("graph", self.why)
            yield self.replayer

    async def catch_up_now(self, *, read: bool = False) -> Graph | None:
        """Bring a current graph up to the journal now; the graph, or None when it cannot
        (not held, not caught up, failing: the journal answers). A ``read`` leaves a large gap
        to the background (it is served from the files meanwhile)."""
        replayer = self.current
        applied = None if replayer is None else replayer.applied
        if applied is None or self.outage.active or (
                read and self._files.position().seq - applied.seq > INLINE_GAP):
            self._wake.set()
            return None
        async with self._lock:
            replayer = self.current
            if replayer is None:
                return None
            try:
                await replayer.catch_up()
            except DualmemError as exc:
                self.fail(exc)
                return None
            return replayer.graph

    def wake(self) -> None:
        """Catch up in the background soon."""
        self._wake.set()

    def fail(self, exc: DualmemError) -> None:
        """A graph failure is a reason to answer from the journal, not to lose a write: the
        journal already holds it, and the background catch-up tries again (the whole journal,
        into a server's graph that was emptied)."""
        if isinstance(exc, GraphEmptied) and self.replayer is not None:
            self.replayer.forget_position()
            self.rebuilt = f"the graph was emptied ({exc.detail}); the journal replayed into it"
        ongoing = self.outage.active
        self.outage.notice(exc)
        self.why = f"{self.holding}, but indexing failed (retrying): {exc}"
        if not (ongoing and self.outage.active):  # an outage is told once, not every retry
            log.warning("graph indexing failed, will retry: %s", exc)
        self._wake.set()

    async def close(self) -> None:
        """Stop the background work, bring the graph up to the journal a last time and close
        it."""
        if self._closed:
            return
        self._closed = True
        # Stop the supervisor before taking the lock it may be waiting for: awaiting it while
        # holding the lock deadlocks should a cancellation be lost (asyncio.wait_for in 3.11
        # can swallow one), so it also checks ``_closed`` and its wait is bounded.
        if self._task is not None:
            import asyncio

            self._task.cancel()
            self._wake.set()
            await asyncio.wait({self._task}, timeout=CLOSE_WAIT)
        async with self._lock:
            replayer, self.replayer = self.replayer, None
            if replayer is None:
                return
            if replayer.applied is not None:
                with contextlib.suppress(DualmemError):
                    await replayer.catch_up()
                    await replayer.record()
                    await replayer.save_kept()  # the background enrichment's last
            await replayer.graph.aclose()

    async def _try_graph(self) -> None:
        import asyncio

        from backends.graph.kuzu import salvage  # a one-shot store never tries the graph

        seen = salvage.identity(self._graph_dir)
        try:
            graph = await self._open_graph()
        except BackendUnavailable as exc:
            if exc.reason not in DAMAGED:
                self.why = f"graph layer {exc.reason}" + (f": {exc.detail}" if exc.detail else "")
                self._retry = exc.reason not in NEVER_RETRY
                if exc.reason != LOCKED:  # no holder to take in hand edits: do it here
                    await self._files.watch()
                return
            moved = await asyncio.to_thread(salvage.move_aside, self._graph_dir, seen)
            if moved is None:  # another process opened it, or moved it and made a new one
                self.why = (f"graph layer {exc.reason}: {exc.detail}; another process has "
                            f"the graph in hand, retrying")
                await self._files.watch()
                return
            self.rebuilt = (f"rebuilt from the journal: the damaged graph ({exc.detail}) "
                            f"is in {moved}")
            log.warning("the graph was damaged (%s); moved to %s, rebuilding", exc.detail, moved)
            try:
                graph = await self._open_graph()
            except BackendUnavailable as again:
                self.why = (f"graph layer {again.reason}: {again.detail}; the journal serves "
                            f"every memory; once fixed, `dualmem repair` rebuilds the graph")
                await self._files.watch()
                return
        self.replayer = Replayer(self._files, graph, self._graph_dir, self._kept,
                                 self._progress)
        self.why = f"{self.holding}; catching up with the journal"
        with contextlib.suppress(DualmemError, OSError):  # kept a while longer, no worse
            damaged.prune(self._graph_dir.parent, damaged.Retention.of(self._graph_dir.parent))
        self._watch()
        await self._files.watch()
        self._wake.set()

    async def _supervise(self) -> None:
        import asyncio

        from backends.graph import owner_pid  # its module runs the graph's threads: asyncio

        delay = RETRY_FIRST
        tried = time.monotonic()
        while self.replayer is None:
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
                async with self.held() as replayer:
                    if self.outage.active:
                        await self.outage.probe(replayer.graph, self._files.position().epoch)
                    await replayer.bring_up()
                self.why = self.held_why()  # a failure before, if any, is over
                delay = RETRY_FIRST
            except DualmemError as exc:
                self.fail(exc)
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
