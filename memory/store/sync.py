"""A synchronous facade over the same store, for callers without an event loop (most agent
frameworks' tools), and for synchronous code that runs inside someone else's event loop.

    with SyncMemory.open(".dualmem") as memory:
        memory.upsert(Episode.create(group_id="myproj", kind="gotcha", name="Kùzu lock",
                                     body="Only one process may open the graph read-write"))
        hits = memory.search("graph lock", group_ids=["myproj"])
        memory.call(lambda store: AgentMemory(store, memory.project_id).add_gotcha("..."))

The store lives on an event loop of its own, run by a private thread while the facade is
open: each call hands its coroutine to that loop and waits for the result, so a caller's own
loop (if any) is never re-entered, and the store's background work (the dual store's replay,
the file layer's watcher) goes on between calls. Errors are the store's own, raised in the
caller's thread. Close the facade (or use it as a context manager) to close the store.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from os import PathLike
from types import TracebackType
from typing import Any, TypeVar

from backends.model import Episode, Hit, Receipt
from backends.protocol import MemoryBackend
from memory.store.config import Config
from memory.store.project import project_id
from memory.store.selection import open_backend

T = TypeVar("T")


class SyncMemory:
    """A ``MemoryBackend`` opened on a private event loop thread; open with ``SyncMemory.open``.
    Safe to call from any thread but the store's own."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="dualmem-sync",
                                         daemon=True)
        self._thread.start()
        self._store: MemoryBackend | None = None

    @classmethod
    def open(
        cls,
        home: str | PathLike[str] | None = None,
        backend: str | None = None,
        *,
        config: Config | None = None,
    ) -> SyncMemory:
        """The store at ``home`` (found as ``open_memory`` finds it), opened and ready."""
        memory = cls(config or Config.from_env(home=home, backend=backend))
        try:
            memory._store = memory._run(_open(memory.config))
        except BaseException:
            memory._stop()
            raise
        return memory

    @property
    def store(self) -> MemoryBackend:
        if self._store is None:
            raise RuntimeError("this SyncMemory is closed")
        return self._store

    @property
    def project_id(self) -> str:
        """The stable id of the home's project (its group)."""
        return project_id(self.config.home)

    def call(self, work: Callable[[MemoryBackend], Awaitable[T]]) -> T:
        """``await work(store)`` on the store's loop: any part of the async API, synchronously."""
        store = self.store

        async def run() -> T:
            return await work(store)

        return self._run(run())

    def upsert(self, episode: Episode) -> Receipt:
        return self._run(self.store.upsert(episode))

    def get(self, episode_id: str) -> Episode | None:
        return self._run(self.store.get(episode_id))

    def delete(self, episode_id: str) -> bool:
        return self._run(self.store.delete(episode_id))

    def search(
        self,
        query: str,
        *,
        group_ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 10,
    ) -> list[Hit]:
        return self._run(self.store.search(query, group_ids=group_ids, kinds=kinds, limit=limit))

    def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> list[Episode]:
        """Every episode ``MemoryBackend.scan`` yields, as a list."""
        store = self.store

        async def collect() -> list[Episode]:
            return [e async for e in store.scan(group_ids=group_ids, kinds=kinds)]

        return self._run(collect())

    def count(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> int:
        return self._run(self.store.count(group_ids=group_ids, kinds=kinds))

    def close(self) -> None:
        """Close the store and stop its thread. Idempotent."""
        store, self._store = self._store, None
        try:
            if store is not None:
                self._run(store.aclose())
        finally:
            self._stop()

    def __enter__(self) -> SyncMemory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self._thread:
            work.close()
            raise RuntimeError("SyncMemory called from its own store's loop: await the store")
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    def _stop(self) -> None:
        if self._loop.is_closed():
            return
        try:
            asyncio.run_coroutine_threadsafe(_wind_down(), self._loop).result()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()


async def _open(config: Config) -> MemoryBackend:
    store, _ = await open_backend(config)
    return store


async def _wind_down() -> None:
    """What ``asyncio.run`` does before it closes its loop: cancel what is left, finish async
    generators, join the default executor's threads."""
    loop = asyncio.get_running_loop()
    left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in left:
        task.cancel()
    await asyncio.gather(*left, return_exceptions=True)
    await loop.shutdown_asyncgens()
    await loop.shutdown_default_executor()
