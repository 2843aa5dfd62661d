"""Search results cached for a time-to-live, dropped on any write made through the cache.

Each entry also carries the position of the store's journal when its search began, and is
served only while the journal still stands there: a write from anywhere (another process, the
raw store, a hand edit the index took in) moves it, so no result older than the last write is
served. Only a layer without a journal (a graph alone) relies on the TTL for writes made
elsewhere. A search that overlaps a write is never cached: each entry carries the write count
at which its search began.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from backends.model import Episode, Hit, Receipt
from backends.protocol import MemoryBackend, Position
from memory.context.front import Front
from memory.context.journal import journal_of, position_of

DEFAULT_TTL_SECONDS = 300.0  # FEAT-GR-006's time-to-live
DEFAULT_MAX_ENTRIES = 1024

_Key = tuple[str, tuple[str, ...] | None, tuple[str, ...] | None, int]


class CachedStore(Front):
    """A ``MemoryBackend`` in front of another; only ``search`` is cached."""

    def __init__(
        self,
        inner: MemoryBackend,
        *,
        ttl: float = DEFAULT_TTL_SECONDS,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(inner)
        self.ttl = ttl
        self.max_entries = max_entries
        self.writes = 0
        self.hits = 0
        self.misses = 0
        self._clock = clock
        self._journal = journal_of(inner)
        self._entries: OrderedDict[_Key, tuple[float, int, Position | None, list[Hit]]] = (
            OrderedDict())

    def invalidate(self) -> None:
        """Forget every cached result (call it after writing behind the cache's back)."""
        self.writes += 1
        self._entries.clear()

    async def upsert(self, episode: Episode) -> Receipt:
        try:
            return await self.inner.upsert(episode)
        finally:
            self.invalidate()

    async def delete(self, episode_id: str) -> bool:
        try:
            return await self.inner.delete(episode_id)
        finally:
            self.invalidate()

    async def search(
        self,
        query: str,
        *,
        group_ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 10,
    ) -> list[Hit]:
        key: _Key = (
            query,
            None if group_ids is None else tuple(group_ids),
            None if kinds is None else tuple(kinds),
            limit,
        )
        now = self._clock()
        at = position_of(self._journal)
        entry = self._entries.get(key)
        if (entry is not None and entry[1] == self.writes and entry[2] == at
                and now - entry[0] < self.ttl):
            self._entries.move_to_end(key)
            self.hits += 1
            return list(entry[3])
        self.misses += 1
        started = self.writes
        hits = await self.inner.search(query, group_ids=group_ids, kinds=kinds, limit=limit)
        if self.writes == started and position_of(self._journal) == at:
            self._entries[key] = (now, started, at, hits)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return list(hits)

    async def aclose(self) -> None:
        self._entries.clear()
        await self.inner.aclose()
