"""Retrieval through entities, written once for every layer: a query that names a file, module,
component or command brings the memories that mention it, and (where the layer holds facts) one
hop further, fused with the lexical ranking.

The fusion only ever raises a score: ``score + (1 - score) * LINK_WEIGHT * link``, with ``link``
in [0, 1] relative to the best-linked memory. A query that names no entity ranks exactly as
before, so relevance thresholds calibrated on lexical scores keep their meaning.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from backends.entities import Entity, entity_uuid, name_terms, text_entities
from backends.ranking import terms

LINK_WEIGHT = 0.6
HOP_WEIGHT = 0.7
"""an episode one fact away counts this much of a direct mention"""
COMMON_SHARE = 0.2
"""an entity mentioned by more than this share of a group's memories names nothing in
particular (a speaker in every line, the project's main module) and is not expanded"""
COMMON_MIN = 20
MAX_LINKED = 200
MIN_TERM_CHARS = 3


@dataclass(frozen=True, slots=True)
class Named:
    entity: str
    group: str
    weight: float


class Links(Protocol):
    """What a layer knows of entities, read by ``expand``."""

    def named(self, query_terms: frozenset[str], exact: Collection[str],
              groups: Collection[str] | None) -> list[tuple[str, str, int]]:
        """(entity uuid, group, episodes mentioning it) of every entity of ``groups`` whose
        ``name_terms`` the query holds, or whose uuid is in ``exact``."""
        ...

    def mentioning(self, entities: Collection[str], groups: Collection[str] | None,
                   kinds: Collection[str] | None) -> Iterable[tuple[str, str]]:
        """(episode id, entity uuid) for every mention of these entities by an episode of the
        given groups and kinds."""
        ...

    def neighbours(self, entities: Collection[str], at: datetime | None
                   ) -> Iterable[tuple[str, str]]:
        """(entity, neighbour) for every fact between them valid at ``at`` (None: now, i.e.
        not invalidated); empty for a layer without facts."""
        ...

    def size(self, group: str) -> int:
        """How many memories ``group`` holds."""
        ...


def matchable(entity: Entity) -> frozenset[str] | None:
    """The terms that name ``entity`` in a query, or None when they are too weak to name it
    (ids such as "T-7" fold to digits and letters every query may hold)."""
    found = name_terms(entity)
    if not any(len(term) >= MIN_TERM_CHARS and not term.isdigit() for term in found):
        return None
    return found


def query_entities(query: str, groups: Collection[str] | None) -> tuple[frozenset[str], set[str]]:
    """The query's terms, and the uuids of the entities it names outright (a path, a name in
    backticks) in each of ``groups`` (none when not filtered: uuids are per group)."""
    exact = {entity_uuid(group, label, name)
             for label, name in text_entities(query) for group in (groups or ())}
    return frozenset(terms(query)), exact


def linked(links: Links, query: str, groups: Collection[str] | None,
           kinds: Collection[str] | None, at: datetime | None = None) -> dict[str, float]:
    """Episode id -> link strength in (0, 1] for the episodes the query's entities reach."""
    query_terms, exact = query_entities(query, groups)
    if not query_terms and not exact:
        return {}
    weights: dict[str, float] = {}
    for entity, group, df in links.named(query_terms, exact, groups):
        if df > max(COMMON_MIN, COMMON_SHARE * links.size(group)):
            continue
        weights[entity] = 1.0 / (1.0 + math.log1p(df))
    if not weights:
        return {}
    strength: dict[str, float] = {}
    for episode, entity in links.mentioning(weights, groups, kinds):
        strength[episode] = strength.get(episode, 0.0) + weights[entity]
    hops: dict[str, float] = {}
    for entity, neighbour in links.neighbours(weights, at):
        if neighbour not in weights:
            hops[neighbour] = max(hops.get(neighbour, 0.0), HOP_WEIGHT * weights[entity])
    if hops:
        for episode, entity in links.mentioning(hops, groups, kinds):
            strength[episode] = strength.get(episode, 0.0) + hops[entity]
    if not strength:
        return {}
    top = heapq.nlargest(MAX_LINKED, strength.items(), key=lambda kv: (kv[1], kv[0]))
    best = top[0][1]
    return {episode: value / best for episode, value in top}


def fuse(lexical: Iterable[tuple[str, float]], links: Mapping[str, float], limit: int
         ) -> list[tuple[str, float]]:
    """The best ``limit`` of lexical hits and linked episodes, scores in [0, 1], best first;
    the lexical ranking itself when nothing is linked."""
    if not links:
        return list(lexical)[:limit]
    scores = dict(lexical)
    for episode, link in links.items():
        base = scores.get(episode, 0.0)
        scores[episode] = base + (1.0 - base) * LINK_WEIGHT * link
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(key, min(1.0, value)) for key, value in ranked[:limit]]
