"""What a layer's knowledge graph holds (``backends.protocol.Knows``) and what one pass of LLM
enrichment did (``backends.protocol.Enriches``): built by the graph layer and read by curation,
never by a one-shot read of the journal."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class Enriched:
    """What one pass of LLM enrichment did."""

    enriched: list[str] = field(default_factory=list)
    """ids of the episodes enriched now"""
    skipped: int = 0
    """free-text episodes already enriched at their current content"""
    entities: int = 0
    """entities graphiti linked to them (ours it resolved onto, and new ones)"""
    facts: int = 0


@dataclass(frozen=True, slots=True)
class KnownEntity:
    """A thing the memories name (graphiti's ``EntityNode``): a file, a component, a
    decision, ..."""

    uuid: str
    name: str
    label: str
    """its kind beside ``Entity`` (``File``, ``Component``, ``Decision``, ...)"""
    group_id: str
    summary: str = ""


@dataclass(frozen=True, slots=True)
class KnownFact:
    """A fact between two entities (graphiti's ``EntityEdge``), with when it held."""

    uuid: str
    name: str
    fact: str
    group_id: str
    source: str
    target: str
    """the names of its ends"""
    valid_at: datetime | None
    invalid_at: datetime | None
    """when it stopped being true (a superseded decision's), None while it holds"""
    expired_at: datetime | None
    """when a rewrite of its memory retired it"""
    episodes: tuple[str, ...] = ()
    """the memories that state it"""
