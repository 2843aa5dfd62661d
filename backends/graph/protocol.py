"""``Graph``: the graph layer as the dual store and the migrator use it, embedded (``kuzu/``)
or on a server (``falkor/``): the memory protocol and what a graph adds to it, following a
journal, keeping history and enrichments for another graph, and graphiti's own indexes.
tests/contract/test_graph.py holds every engine to these members' contracts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from backends.protocol import FindsIds, MemoryBackend, Position

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Sequence

    from backends.graph.history import Enrichment, KeptFact


class Graph(MemoryBackend, FindsIds, Protocol):
    """The graph layer as the dual store and the migrator use it, embedded or on a server."""

    @property
    def shared(self) -> bool:
        """True when many processes and homes write it at once (a server): it is then not
        derived from one journal, and holds memories the journal does not."""

    async def applied(self, epoch: str | None = None) -> Position | None:
        """the position of journal ``epoch`` it was last brought up to, or None"""

    async def record_applied(self, position: Position) -> None: ...

    async def retired_facts(self, episodes: Collection[str] | None = None) -> list[KeptFact]:
        """the facts rewrites retired, kept as history (the journal does not hold them): of
        ``episodes`` only, when given"""

    async def keep_history(self, facts: Sequence[KeptFact]) -> int:
        """write another graph's retired facts this one lacks; returns how many it wrote"""

    async def enriched(self) -> dict[str, str]:
        """episode id -> the digest of the content graphiti's LLM extraction last ran on"""

    async def enrichments(self, keys: Iterable[str]) -> list[Enrichment]:
        """what that extraction added to these memories (those held at that content)"""

    async def keep_enrichments(self, found: Sequence[Enrichment]) -> int:
        """write back enrichments of memories held at their content; returns how many"""

    async def build_graphiti_indexes(self) -> None:
        """build graphiti's own full-text indexes and keep them from then on"""

    async def refresh_graphiti_indexes(self) -> None:
        """rebuild graphiti's full-text indexes if a write has left them stale"""
