"""The graph's entities and facts, found by words (graphiti's ``search_nodes`` and
``search_facts`` for an agent): each with its validity, retired facts included on request. A
layer without a knowledge graph (the files alone, or a process that does not hold the graph)
answers with nothing and says why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, TypeVar

from rapidfuzz import fuzz

from backends.errors import BackendUnavailable
from backends.model import natural_key
from backends.protocol import KnownEntity, KnownFact, Knows, MemoryBackend

T = TypeVar("T", KnownEntity, KnownFact)
MATCH = 80.0
"""the least rapidfuzz ``partial_ratio`` (0-100) of the folded query within an entity's or
a fact's words that counts as found: a typo or an inflection still finds it"""
NO_GRAPH = ("this layer keeps no knowledge graph: entities and facts are the graph's (the MCP "
            "server or `dualmem watch` holds it in auto; or --backend graph)")


@dataclass
class Found(Generic[T]):
    items: list[T] = field(default_factory=list)
    reason: str = ""
    """why there is nothing to search, when the layer cannot answer"""

    def to_json(self) -> dict[str, Any]:
        return {"items": [asdict(item) for item in self.items], "reason": self.reason}


async def _knowledge(store: MemoryBackend, group_ids: Sequence[str]
                     ) -> tuple[list[KnownEntity], list[KnownFact]] | str:
    if not isinstance(store, Knows):
        return NO_GRAPH
    try:
        return await store.knowledge(group_ids)
    except BackendUnavailable as exc:
        return f"the graph cannot answer here: {exc}"


def _ranked(query: str, items: Sequence[T], text: Any, limit: int) -> list[T]:
    wanted = natural_key(query)
    if not wanted:
        return list(items[:limit])
    scored = [(fuzz.partial_ratio(wanted, natural_key(text(item))), item) for item in items]
    return [item for score, item in sorted(scored, key=lambda pair: -pair[0])
            if score >= MATCH][:limit]


async def search_entities(store: MemoryBackend, group_ids: Sequence[str], query: str,
                          limit: int = 20) -> Found[KnownEntity]:
    """The entities whose name or summary matches ``query`` (every one for an empty query)."""
    known = await _knowledge(store, group_ids)
    if isinstance(known, str):
        return Found(reason=known)
    return Found(_ranked(query, known[0], lambda e: f"{e.name} {e.summary}", limit))


async def search_facts(store: MemoryBackend, group_ids: Sequence[str], query: str,
                       limit: int = 20, *, retired: bool = False) -> Found[KnownFact]:
    """The facts whose text or ends match ``query``: those in force, and with ``retired``
    those superseded or retired by a rewrite too."""
    known = await _knowledge(store, group_ids)
    if isinstance(known, str):
        return Found(reason=known)
    facts = [fact for fact in known[1]
             if retired or (fact.invalid_at is None and fact.expired_at is None)]
    return Found(_ranked(query, facts, lambda f: f"{f.source} {f.name} {f.target} {f.fact}",
                         limit))
