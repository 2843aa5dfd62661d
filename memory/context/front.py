"""What a store in front of another passes through unchanged: reads other than search."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from backends.model import Episode
from backends.protocol import MemoryBackend


class Front:
    """The part of a ``MemoryBackend`` in front of ``inner`` that only delegates."""

    def __init__(self, inner: MemoryBackend) -> None:
        self.inner = inner
        self.layer = inner.layer

    async def get(self, episode_id: str) -> Episode | None:
        return await self.inner.get(episode_id)

    def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        return self.inner.scan(group_ids=group_ids, kinds=kinds)

    async def count(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> int:
        return await self.inner.count(group_ids=group_ids, kinds=kinds)
