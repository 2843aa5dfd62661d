"""What the graph layer does the same on every database (embedded Kùzu or LadybugDB in
``kuzu/``, a FalkorDB server in ``falkor/``): what a write needs besides the episodes, the
links read back into memory, and search over episodes, entities and facts."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime

import numpy as np

from backends.errors import ProviderFailed, WriteFailed
from backends.graph import meaning
from backends.graph.embedder import AnyEmbedder, Vectors, embed, structure_vectors
from backends.graph.history import Enrichment, KeptFact, digest
from backends.graph.index import EpisodeIndex
from backends.graph.links import GraphLinks
from backends.model import Episode, Hit, now
from backends.search.entities import Entity, Extraction, extract
from backends.search.expansion import current_first, fuse, linked
from backends.search.expansion import valid_at as holds_at
from backends.search.ranking import search_text

log = logging.getLogger(__name__)
LAYER = "graph"
NO_LLM = "no LLM is configured (DUALMEM_LLM, --llm or open_memory(llm=...))"
"""why ``enrich`` cannot run (``ProviderFailed``)"""

Prepared = tuple[Episode, Vectors, Extraction, dict[str, list[float]]]
"""an episode, its vector, its entities and facts, and graphiti's vectors of their names"""
MentionRow = tuple[str, str, str, str]
"""episode, entity, label, name"""
FactRow = tuple[str, str, str, str, datetime, datetime | None]
"""fact, source entity, target entity, episode, valid_at, invalid_at (aware UTC)"""


async def prepare(embedder: AnyEmbedder, episodes: Sequence[Episode]) -> list[Prepared]:
    """What writing ``episodes`` needs besides them, from two calls to the embedder. A provider
    failing is ``WriteFailed`` before anything is written: the caller may try again."""
    structures = [extract(episode) for episode in episodes]
    try:
        vectors = await embed(embedder, [search_text(episode) for episode in episodes])
        named = await structure_vectors(embedder, structures)
    except ProviderFailed as exc:
        raise WriteFailed(f"graph layer: {exc}") from exc
    return list(zip(episodes, vectors, structures, named, strict=True))


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


async def kept_vectors(embedder: AnyEmbedder, facts: Iterable[KeptFact],
                       entities: Iterable[Entity] = ()) -> dict[str, list[float]]:
    """graphiti's ``fact_embedding`` and ``name_embedding`` of kept facts, their ends and
    ``entities``, made by the target's embedder (as ``structure_vectors`` for a write)."""
    facts = list(facts)
    texts = {fact.uuid: fact.fact for fact in facts} | {
        entity.uuid: entity.name for fact in facts for entity in (fact.source, fact.target)} | {
        entity.uuid: entity.name for entity in entities}
    if not texts:
        return {}
    vectors = await embed(embedder, list(texts.values()))
    return {key: vector.tolist() for key, vector in zip(texts, vectors, strict=True)}


def learn_history(links: GraphLinks, facts: Iterable[KeptFact]) -> None:
    """The links of kept facts just written: followed for a search in their valid time."""
    for fact in facts:
        links.add_fact(fact.uuid, fact.source.uuid, fact.target.uuid, fact.episode,
                       fact.valid_at, fact.invalid_at)


def learn_enrichments(links: GraphLinks, found: Iterable[Enrichment]) -> None:
    """The links of enrichments just written back (``enrich._learn`` when they were made)."""
    for item in found:
        links.add_mentions(item.episode, list(item.mentions), item.group_id)
        learn_history(links, item.facts)


Linked = tuple[list[Entity], list[KeptFact]]
"""what an episode mentions, and the facts it states now"""


async def enrichments(index: EpisodeIndex, recorded: Mapping[str, str], keys: Iterable[str],
                      linked: Callable[[str], Awaitable[Linked]]) -> list[Enrichment]:
    """What graphiti's extraction added to each of the memories ``keys``, enriched at the
    content held now (``recorded``: id -> digest): what each mentions and states, as
    ``linked`` reads it from the database, beyond our own extraction of it."""
    found = []
    for key in keys:
        episode = index.episode(key)
        if episode is None or digest(episode) != recorded.get(key):
            continue
        mentions, facts = await linked(key)
        ours = extract(episode)
        entities = {entity.uuid for entity in ours.entities}
        stated = {fact.uuid for fact in ours.facts}
        found.append(Enrichment(
            key, episode.group_id, recorded[key],
            tuple(entity for entity in mentions if entity.uuid not in entities),
            tuple(fact for fact in facts if fact.uuid not in stated)))
    return found


def at_content(index: EpisodeIndex, facts: Iterable[KeptFact]) -> list[KeptFact]:
    """Retired facts with the content their memory is at here (``KeptFact.digest``)."""
    return [replace(fact, digest=digest(episode))
            if (episode := index.episode(fact.episode)) is not None else fact for fact in facts]


def retired_again(index: EpisodeIndex, facts: Iterable[KeptFact]) -> set[str]:
    """The kept facts whose memory is here at the content it was retired at: retired even
    where that memory states them (a rewrite since restates them)."""
    return {fact.uuid for fact in facts if fact.expired_at is not None and fact.digest
            and (episode := index.episode(fact.episode)) is not None
            and digest(episode) == fact.digest}


def current(index: EpisodeIndex, found: Iterable[Enrichment]) -> list[Enrichment]:
    """Those of ``found`` whose memory is here, at the content they were made from."""
    return [item for item in found if (episode := index.episode(item.episode)) is not None
            and digest(episode) == item.digest]


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
    wanted = limit if as_of is None else 4 * limit
    if meaning.semantic(embedder):  # vectors that mean something rank beside the words
        # Every candidate, cut after the links: a word hit the vectors pushed below the cut
        # keeps its words' score for the links to add to (else a memory named by words and
        # by an entity ties with one named by the entity alone).
        lexical = await meaning.search(index, embedder, query, groups=group_ids, kinds=kinds,
                                       limit=max(wanted, 2 * meaning.CANDIDATES))
    else:
        lexical = index.search(query, groups=group_ids, kinds=kinds, limit=wanted)
    if len(lexical) < wanted and not meaning.semantic(embedder):  # embedded if room is left
        try:
            vector = (await embed(embedder, [query]))[0]
        except ProviderFailed as exc:  # a remote embedder is down: rank by the words alone
            log.warning("searching without vectors: %s", exc)
            vector = np.zeros(embedder.dimension, dtype=np.float32)
        lexical = index.neighbours(lexical, vector, groups=group_ids, kinds=kinds, limit=wanted)
    ranked = fuse(lexical, linked(links, query, group_ids, kinds, at=as_of), wanted)
    found = [(episode, score)
             for key, score in ranked if (episode := index.episode(key)) is not None]
    if as_of is not None:
        found = [(episode, score) for episode, score in found if holds_at(episode, as_of)]
    else:
        found = current_first(found, now())
    return [Hit(episode=episode, score=score, layer=LAYER) for episode, score in found[:limit]]
