"""One context's searches, each answered from a wider one already made when that is exact.

A context searches the same text for several categories, each with its own kinds and limit,
and the expanders search the subject again. Every search costs about the same whatever its
kinds (the index reads the query's postings, links and vectors once per search), so one pass
over the union of the kinds serves them all. It answers a narrower search exactly when the
wider one's hits of the wanted kinds fill the limit, or when the wider one was not cut short
(it returned fewer than it asked for, so nothing of any kind is missing); otherwise the store
is searched as asked. Scores do not depend on the kinds searched (``backends.search.ranking``), so a
hit scores the same in either answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from backends.model import Episode, Hit, Receipt
from backends.protocol import MemoryBackend
from memory.context.front import Front

_Key = tuple[str, tuple[str, ...] | None]


class SearchMemo(Front):
    """A ``MemoryBackend`` in front of another for one context: searches are remembered and
    narrower ones answered from them; writes go through and forget everything."""

    def __init__(self, inner: MemoryBackend) -> None:
        super().__init__(inner)
        self.searched = 0
        """searches that reached the store"""
        self._passes: dict[_Key, list[tuple[frozenset[str] | None, int, list[Hit]]]] = {}

    async def search(
        self,
        query: str,
        *,
        group_ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 10,
    ) -> list[Hit]:
        key: _Key = (query, None if group_ids is None else tuple(group_ids))
        wanted = None if kinds is None else frozenset(kinds)
        for covered, asked, hits in self._passes.get(key, ()):
            if covered is not None and (wanted is None or not wanted <= covered):
                continue
            mine = [h for h in hits if wanted is None or h.episode.kind in wanted]
            if len(mine) >= limit or len(hits) < asked:
                return mine[:max(limit, 0)]
        self.searched += 1
        found = await self.inner.search(query, group_ids=group_ids, kinds=kinds, limit=limit)
        self._passes.setdefault(key, []).append((wanted, limit, found))
        return list(found)

    async def upsert(self, episode: Episode) -> Receipt:
        self._passes.clear()
        return await self.inner.upsert(episode)

    async def delete(self, episode_id: str) -> bool:
        self._passes.clear()
        return await self.inner.delete(episode_id)

    async def aclose(self) -> None:
        """The memo lives for one context; the store it fronts is its owner's to close."""
        self._passes.clear()
