"""What the graph layer does the same on every database (embedded Kùzu or LadybugDB in
``store.py``, a FalkorDB server in ``falkor.py``): the links read back into memory, and search
over episodes, entities and facts."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

import numpy as np

from backends.entities import Entity
from backends.errors import ProviderFailed
from backends.expansion import fuse, linked
from backends.graph.embedder import AnyEmbedder, embed
from backends.graph.index import EpisodeIndex
from backends.graph.links import GraphLinks
from backends.model import Episode, Hit, now

log = logging.getLogger(__name__)
LAYER = "graph"
SUPERSEDED_WEIGHT = 0.5

MentionRow = tuple[str, str, str, str]
"""episode, entity, label, name"""
FactRow = tuple[str, str, str, str, datetime, datetime | None]
"""fact, source entity, target entity, episode, valid_at, invalid_at (aware UTC)"""


def add_links(links: GraphLinks, groups: Mapping[str, str], mentions: Iterable[MentionRow],
              facts: Iterable[FactRow]) -> None:
    """The mentions and facts read from a database, for the episodes of ``groups`` (id ->
    group)."""
    for episode, entity, label, name in mentions:
        if episode in groups:
            links.add_mentions(episode, [Entity(entity, label, name)], groups[episode])
    for fact, source, target, episode, valid_at, invalid_at in facts:
        if episode in groups:
            links.add_fact(fact, source, target, episode, valid_at, invalid_at)


async def search(
    index: EpisodeIndex,
    links: GraphLinks,
    embedder: AnyEmbedder,
    query: str,
    *,
    group_ids: Sequence[str] | None,
    kinds: Sequence[str] | None,
    limit: int,
    as_of: datetime | None,
) -> list[Hit]:
    """The protocol's search, through the graph: memories that mention an entity the query
    names, or one fact away from it, join the lexical ranking. Facts are followed while
    valid: now, or at ``as_of``, which also leaves out memories not valid then."""
    if limit <= 0 or not query.strip():
        return []
    try:
        vector = (await embed(embedder, [query]))[0]
    except ProviderFailed as exc:  # a remote embedder is down: rank by the words alone
        log.warning("searching without vectors: %s", exc)
        vector = np.zeros(embedder.dimension, dtype=np.float32)
    wanted = limit if as_of is None else 4 * limit
    lexical = index.search(query, vector, groups=group_ids, kinds=kinds, limit=wanted)
    ranked = fuse(lexical, linked(links, query, group_ids, kinds, at=as_of), wanted)
    hits = [Hit(episode=episode, score=score, layer=LAYER)
            for key, score in ranked if (episode := index.episode(key)) is not None]
    if as_of is not None:
        hits = [hit for hit in hits if valid_at(hit.episode, as_of)]
    elif any(hit.episode.invalid_at is not None for hit in hits):
        # What is no longer true ranks below what is: history, not current advice.
        moment = now()
        hits = sorted((hit if valid_at(hit.episode, moment) else
                       hit.model_copy(update={"score": hit.score * SUPERSEDED_WEIGHT})
                       for hit in hits), key=lambda hit: -hit.score)
    return hits[:limit]


def valid_at(episode: Episode, at: datetime) -> bool:
    starts = episode.valid_at or episode.created_at
    return starts <= at and (episode.invalid_at is None or episode.invalid_at > at)
