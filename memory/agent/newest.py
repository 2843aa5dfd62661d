"""The newest memories in force of some kinds: what the session-start hook lists.

Read newest first from a store's index where it has one (``backends.protocol.ReadsNewest``),
stopping once enough are found, rather than reading and checking every memory of these kinds
(thousands in a big home) to keep the last few.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from backends.model import Episode
from backends.protocol import MemoryBackend, ReadsNewest
from memory.agent.validity import in_force


async def newest_in_force(store: MemoryBackend, group_ids: Sequence[str],
                          kinds: Sequence[str], limit: int) -> list[Episode]:
    """The ``limit`` newest episodes in force of ``kinds``, newest first: ``scan``'s order
    (by created_at, id) reversed."""
    found: list[Episode] = []
    newest = (store.newest(group_ids=group_ids, kinds=kinds) if isinstance(store, ReadsNewest)
              else _reversed_scan(store, group_ids, kinds))
    async for episode in newest:
        if len(found) >= limit:
            break
        if in_force(episode):
            found.append(episode)
    return found


async def _reversed_scan(store: MemoryBackend, group_ids: Sequence[str],
                         kinds: Sequence[str]) -> AsyncIterator[Episode]:
    for episode in reversed([e async for e in store.scan(group_ids=group_ids, kinds=kinds)]):
        yield episode
