"""The graph's entities, mentions and facts as search reads them (``expansion.Links``), held in
memory beside the episode index: built from the rows at open, kept current by our own writes.
A Kùzu round trip per query cost more than the whole lexical search.

Where each episode lives (group, kind) is asked of ``Places``: the episode index on disk, so an
open does not read a row per stored episode (at 100k that alone cost more than the 300 ms an
open may take); a layer without one keeps them in memory (``add_place``)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from backends.model import Episode
from backends.search.entities import Entity, Extraction
from backends.search.expansion import holds, matchable


class Places(Protocol):
    def located(self, keys: Collection[str]) -> dict[str, tuple[str, str]]:
        """key -> (group, kind) of those of ``keys`` that are stored"""
        ...

    def group_size(self, group: str) -> int:
        """How many episodes ``group`` holds."""
        ...


class _MemoryPlaces:
    def __init__(self) -> None:
        self.episodes: dict[str, tuple[str, str]] = {}  # episode -> (group, kind)
        self.sizes: Counter[str] = Counter()

    def put(self, key: str, group: str, kind: str) -> None:
        if key not in self.episodes:
            self.sizes[group] += 1
        self.episodes[key] = (group, kind)

    def drop(self, key: str) -> None:
        known = self.episodes.pop(key, None)
        if known is not None:
            self.sizes[known[0]] -= 1

    def located(self, keys: Collection[str]) -> dict[str, tuple[str, str]]:
        return {key: self.episodes[key] for key in keys if key in self.episodes}

    def group_size(self, group: str) -> int:
        return self.sizes[group]


@dataclass(slots=True)
class _Fact:
    source: str
    target: str
    episode: str
    valid_at: datetime
    invalid_at: datetime | None


class GraphLinks:
    def __init__(self, places: Places | None = None) -> None:
        """``places``: where stored episodes live, kept current by their writer; None: kept
        here, through ``put``, ``add_place`` and ``drop``."""
        self._own: _MemoryPlaces | None = None
        if places is None:
            places = self._own = _MemoryPlaces()
        self._places = places
        self._groups: dict[str, str] = {}  # entity -> group
        self._by_term: dict[str, set[str]] = defaultdict(set)
        self._terms: dict[str, frozenset[str]] = {}
        self._mentions: dict[str, set[str]] = defaultdict(set)  # entity -> episodes
        self._mentioned: dict[str, set[str]] = {}  # episode -> entities
        self._facts: dict[str, _Fact] = {}
        self._by_entity: dict[str, set[str]] = defaultdict(set)  # entity -> facts
        self._episode_facts: dict[str, set[str]] = defaultdict(set)

    @property
    def entity_count(self) -> int:
        return len(self._groups)

    @property
    def fact_count(self) -> int:
        return len(self._facts)

    # -- keeping current ----------------------------------------------------------------------

    def put(self, episode: Episode, structure: Extraction, retired: Sequence[str],
            at: datetime) -> None:
        """``episode`` as now written; its facts ``retired`` at ``at`` stay, invalidated."""
        self.drop(episode.id, keep_facts=retired)
        for fact_id in retired:
            old = self._facts.get(fact_id)
            if old is not None and old.invalid_at is None:
                old.invalid_at = at
        self.add_place(episode.id, episode.group_id, episode.kind)
        self.add_mentions(episode.id, structure.entities, episode.group_id)
        for fact in structure.facts:
            self.add_fact(fact.uuid, fact.source, fact.target, episode.id, fact.valid_at,
                          fact.invalid_at)

    def add_place(self, key: str, group: str, kind: str) -> None:
        """An episode by its key, group and kind (what an index keeps of it)."""
        if self._own is not None:
            self._own.put(key, group, kind)

    def add_mentions(self, episode: str, entities: Iterable[Entity], group: str) -> None:
        for entity in entities:
            if entity.uuid not in self._groups:
                self._groups[entity.uuid] = group
                found = matchable(entity)
                if found is not None:
                    self._terms[entity.uuid] = found
                    for term in found:
                        self._by_term[term].add(entity.uuid)
            self._mentions[entity.uuid].add(episode)
            self._mentioned.setdefault(episode, set()).add(entity.uuid)

    def add_fact(self, uuid: str, source: str, target: str, episode: str, valid_at: datetime,
                 invalid_at: datetime | None) -> None:
        self._facts[uuid] = _Fact(source, target, episode, valid_at, invalid_at)
        self._by_entity[source].add(uuid)
        self._by_entity[target].add(uuid)
        self._episode_facts[episode].add(uuid)

    def drop(self, episode: str, keep_facts: Collection[str] = ()) -> None:
        if self._own is not None:
            self._own.drop(episode)
        touched = self._mentioned.pop(episode, set())
        for entity in touched:
            self._mentions[entity].discard(episode)
        for fact_id in self._episode_facts.pop(episode, set()) - set(keep_facts):
            fact = self._facts.pop(fact_id)
            touched.update((fact.source, fact.target))
            self._by_entity[fact.source].discard(fact_id)
            self._by_entity[fact.target].discard(fact_id)
        if keep_facts:
            self._episode_facts[episode].update(f for f in keep_facts if f in self._facts)
        # Entities nothing mentions or relates any more go, as in the rows.
        for entity in touched:
            if (entity in self._groups and not self._mentions.get(entity)
                    and not self._by_entity.get(entity)):
                self._forget_entity(entity)

    def _forget_entity(self, entity: str) -> None:
        del self._groups[entity]
        self._mentions.pop(entity, None)
        self._by_entity.pop(entity, None)
        for term in self._terms.pop(entity, frozenset()):
            self._by_term[term].discard(entity)

    # -- expansion.Links ----------------------------------------------------------------------

    def named(self, query_terms: frozenset[str], exact: Collection[str],
              groups: Collection[str] | None) -> list[tuple[str, str, int, frozenset[str]]]:
        candidates = {e for term in query_terms for e in self._by_term.get(term, ())}
        found = [e for e in candidates if self._terms[e] <= query_terms]
        found += [e for e in exact if e in self._groups and e not in found]
        return [(e, self._groups[e], len(self._mentions.get(e, ())),
                 self._terms.get(e, frozenset())) for e in sorted(found)
                if groups is None or self._groups[e] in groups]

    def mentioning(self, entities: Collection[str], groups: Collection[str] | None,
                   kinds: Collection[str] | None) -> Iterable[tuple[str, str]]:
        mentions = [(episode, entity) for entity in entities
                    for episode in self._mentions.get(entity, ())]
        places = self._places.located({episode for episode, _ in mentions})
        for episode, entity in mentions:
            group, kind = places.get(episode, ("", ""))
            if group and (groups is None or group in groups) and (kinds is None
                                                                  or kind in kinds):
                yield episode, entity

    def neighbours(self, entities: Collection[str], at: datetime | None
                   ) -> Iterable[tuple[str, str]]:
        for entity in entities:
            for fact_id in self._by_entity.get(entity, ()):
                fact = self._facts[fact_id]
                if holds(fact.valid_at, fact.invalid_at, at):
                    yield entity, fact.target if fact.source == entity else fact.source

    def size(self, group: str) -> int:
        return self._places.group_size(group)
