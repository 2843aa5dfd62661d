"""Retrieval through entities, written once for every layer: a query that names a file, module,
component or command brings the memories that mention it, and (where the layer holds facts) one
hop further, fused with the lexical ranking.

The fusion only ever raises a score: ``score + (1 - score) * LINK_WEIGHT * link``, with ``link``
in [0, 1] measuring how firmly the query names what the memory mentions: an entity the query
names outright (a path, a name in backticks) counts fully; one named by words counts by the
share of the query those words are, divided among the entities the same words name ("refund"
names ``app/api/refunds.py``, ``app/services/refunds.py`` and ``Refunds.tsx``, none of them
firmly). So a link weighs about what the words that made it weigh, and a word that happens to be
a file's stem does not lift that file's memories above what the query is about. A query that
names no entity ranks exactly as before: scores stay on the lexical scale, and relative cuts
(context selection) mean the same with and without links.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

from backends.model import Episode
from backends.search.entities import Entity, entity_uuid, name_terms
from backends.search.ranking import terms
from backends.search.text_names import text_entities

LINK_WEIGHT = 0.6
HOP_WEIGHT = 0.7
"""an episode one fact away counts this much of a direct mention"""
COMMON_SHARE = 0.2
"""an entity mentioned by more than this share of a group's memories names nothing in
particular (a speaker in every line, the project's main module) and is not expanded"""
COMMON_MIN = 20
MAX_LINKED = 200
MIN_TERM_CHARS = 3
SUPERSEDED_WEIGHT = 0.5


class Named(NamedTuple):
    entity: str
    group: str
    weight: float


class Links(Protocol):
    """What a layer knows of entities, read by ``expand``."""

    def named(self, query_terms: frozenset[str], exact: Collection[str],
              groups: Collection[str] | None) -> list[tuple[str, str, int, frozenset[str]]]:
        """(entity uuid, group, episodes mentioning it, its ``matchable`` terms or an empty
        set) of every entity of ``groups`` whose ``name_terms`` the query holds, or whose uuid
        is in ``exact``."""
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


def holds(valid_at: datetime, invalid_at: datetime | None, at: datetime | None) -> bool:
    """Whether a fact valid over [``valid_at``, ``invalid_at``) holds at ``at`` (None: now,
    i.e. it is not invalidated)."""
    if at is None:
        return invalid_at is None
    return valid_at <= at and (invalid_at is None or at < invalid_at)


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
    found = [(entity, df, words) for entity, group, df, words
             in links.named(query_terms, exact, groups)
             if df <= max(COMMON_MIN, COMMON_SHARE * links.size(group))]
    if not found:
        return {}
    sharing = Counter(words for entity, _, words in found if entity not in exact)
    rarest = max(_specificity(df) for _, df, _ in found)
    weights = {entity: naming(entity in exact, words, len(query_terms), sharing[words])
               * _specificity(df) / rarest for entity, df, words in found}
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
    top = heapq.nlargest(MAX_LINKED, strength.items(), key=lambda kv: (kv[1], kv[0]))
    return {episode: min(1.0, value) for episode, value in top}


def naming(outright: bool, words: frozenset[str], query_size: int, sharing: int) -> float:
    """How firmly a query of ``query_size`` terms names an entity: fully when outright (a path,
    a name in backticks), else by the share of the query its ``words`` are, divided among the
    ``sharing`` entities those same words name."""
    if outright:
        return 1.0
    return len(words) / max(query_size, len(words), 1) / max(sharing, 1)


def _specificity(df: int) -> float:
    """An entity few memories mention says more about each of them."""
    return 1.0 / (1.0 + math.log1p(df))


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


def valid_at(episode: Episode, at: datetime) -> bool:
    starts = episode.valid_at or episode.created_at
    return starts <= at and (episode.invalid_at is None or episode.invalid_at > at)


def current_first(ranked: Sequence[tuple[Episode, float]], at: datetime
                  ) -> list[tuple[Episode, float]]:
    """What is no longer true at ``at`` ranks below what is: history, not current advice."""
    if all(episode.invalid_at is None for episode, _ in ranked):
        return list(ranked)
    return sorted(((episode, score if valid_at(episode, at) else score * SUPERSEDED_WEIGHT)
                   for episode, score in ranked), key=lambda pair: -pair[1])
