"""Episodes as graphiti rows, and every query the store runs (on the database's worker thread).

The Kùzu-specific part of the data model lives here: graphiti's Kùzu schema reifies a fact
(``EntityEdge``) as ``(a:Entity)-[:RELATES_TO]->(f:RelatesToNode_)-[:RELATES_TO]->(b:Entity)``,
so a fact is a node with ``fact``, ``valid_at``, ``invalid_at``, ``expired_at``, ``episodes``
and ``fact_embedding``; an episode lists its facts in ``entity_edges``. What the facts and
entities are is decided once for every layer (``backends.search.entities``).

Kùzu drops a timestamp's zone, so times are written as naive UTC and read back as UTC. Episodic
rows are written with prepared ``CREATE`` in one transaction (a replaced episode is deleted and
created again): graphiti's MERGE/SET save path is six times slower, and MERGE/SET or ``UNWIND``
batches would corrupt a Kùzu full-text index that any tool built over these rows. The only SET
on Episodic is ``reembed``'s.
"""

from __future__ import annotations

import csv
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, NamedTuple

from backends.graph.history import Enrichment, KeptFact
from backends.graph.kuzu import queries
from backends.graph.kuzu.database import COPY_FILE_PREFIX, Session
from backends.graph.stored import filters
from backends.model import Episode, now
from backends.search.entities import Entity, Extraction

LOOKUPS = 32
COPY_MIN = 64  # below this, a COPY's fixed cost (a temporary file) is not worth it


def texts(session: Session, query: str) -> list[tuple[str, str]]:
    """(uuid, text) rows of ``queries.ENTITY_NAMES`` or ``queries.FACT_TEXTS``."""
    return [(key, text or "") for key, text in session.rows(query)]


@dataclass(frozen=True, slots=True)
class EpisodeWrite:
    episode: Episode
    vector: str
    structure: Extraction = field(default_factory=lambda: Extraction([], []))
    name_vectors: dict[str, list[float]] = field(default_factory=dict)
    """entity uuid -> the vector of its name; fact uuid -> the vector of its text"""


class StoredRow(NamedTuple):
    episode: Episode
    vector: str | None


def write_episodes(session: Session, writes: Sequence[EpisodeWrite], stored: set[str],
                   at: datetime) -> dict[str, list[str]]:
    """Replace or create each episode with its entities, mentions and facts, in one
    transaction. A replaced episode's facts that it no longer states are retired at ``at``
    (``invalid_at``, ``expired_at``). Returns episode id -> the retired facts it keeps."""
    retired: dict[str, list[str]] = {}
    with session.transaction():
        dropped: set[str] = set()
        for write in writes:
            old_facts: list[str] = []
            if write.episode.id in stored:
                old_facts = _edges(session, write.episode.id)
                dropped.update(_delete(session, write.episode.id))
            kept = [f for f in old_facts if f not in {fact.uuid for fact in write.structure.facts}]
            if kept:
                session.rows(queries.RETIRE_FACTS, uuids=kept, at=_naive(at))
                retired[write.episode.id] = kept
            _create(session, write, set(old_facts), kept)
        if dropped:
            session.rows(queries.DELETE_ORPHANS, uuids=sorted(dropped))
    return retired


def bulk_part(
    writes: Sequence[EpisodeWrite], stored: set[str], directory: Path
) -> list[EpisodeWrite]:
    """The writes ``copy_episodes`` can take: new episodes without entities, enough of them to
    be worth a COPY, none with an empty body (Kùzu's CSV reader reads "" as NULL)."""
    if any(c in str(directory) for c in "'\\"):  # the path goes into the statement's text
        return []
    bulk = [w for w in writes
            if w.episode.id not in stored and not w.structure.entities and w.episode.body]
    return bulk if len(bulk) >= COPY_MIN else []


def copy_episodes(session: Session, writes: Sequence[EpisodeWrite], directory: Path) -> None:
    """Create new Episodic rows with one ``COPY FROM`` (25k rows/s against 4k for prepared
    CREATE; like CREATE, it keeps a Kùzu full-text index correct). One statement: all or none."""
    # Not a `with` block: the file outlives its writing (Kùzu reads it), and whatever fails from
    # here on (a full disk, a text that cannot be encoded, the COPY itself), it goes.
    out = tempfile.NamedTemporaryFile(  # noqa: SIM115
        "w", dir=directory, prefix=COPY_FILE_PREFIX, suffix=".csv", newline="", encoding="utf-8",
        delete=False,
    )
    try:
        with out:
            _write_csv(out, writes)
        session.script(queries.COPY_EPISODES.format(file=out.name))
    finally:
        Path(out.name).unlink(missing_ok=True)


def _write_csv(out: IO[str], writes: Sequence[EpisodeWrite]) -> None:
    """One row per write, columns in table order: graphiti's, then ours
    (database._EPISODIC_EXTRA)."""
    table = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for write in writes:
        e = write.episode
        table.writerow([
            e.id, e.name, e.group_id, _csv_time(e.created_at),
            "json" if e.data is not None else "text", e.source, e.body,
            _csv_time(e.valid_at or e.created_at), "[]", e.kind,
            _csv_time(e.invalid_at) if e.invalid_at else "",
            "true" if e.valid_at is not None else "false", write.vector,
        ])


def _csv_time(value: datetime) -> str:
    return _naive(value).isoformat(sep=" ")


def delete_episode(session: Session, key: str) -> None:
    """The episode, its facts (history included) and the entities nothing else holds."""
    with session.transaction():
        facts = _edges(session, key)
        dropped = set(_delete(session, key))
        if facts:
            for source, target in session.rows(queries.DELETE_FACTS, uuids=facts):
                dropped.update((source, target))
        if dropped:
            session.rows(queries.DELETE_ORPHANS, uuids=sorted(dropped))


def _edges(session: Session, key: str) -> list[str]:
    found = session.rows(queries.EDGES_OF, uuid=key)
    return list(found[0][0] or []) if found else []


def _delete(session: Session, key: str) -> list[str]:
    mentioned = [row[0] for row in session.rows(queries.MENTIONED, uuid=key)]
    session.rows(queries.DELETE_EPISODE, uuid=key)
    return mentioned


def _create(session: Session, write: EpisodeWrite, existing: Collection[str] = (),
            retired: Sequence[str] = ()) -> None:
    episode = write.episode
    session.rows(
        queries.CREATE_EPISODE,
        uuid=episode.id,
        name=episode.name,
        group_id=episode.group_id,
        created_at=_naive(episode.created_at),
        # graphiti's EpisodeType; our own source goes to source_description.
        source="json" if episode.data is not None else "text",
        source_description=episode.source,
        content=episode.body,
        valid_at=_naive(episode.valid_at or episode.created_at),
        kind=episode.kind,
        invalid_at=_naive(episode.invalid_at) if episode.invalid_at else None,
        valid_at_set=episode.valid_at is not None,
        embedding=write.vector,
        edges=[fact.uuid for fact in write.structure.facts] + list(retired),
    )
    _link(session, write, existing)


def _link(session: Session, write: EpisodeWrite, existing: Collection[str] = ()) -> None:
    """The episode's entities (created, or given what they lack), mentions and facts."""
    episode = write.episode
    created_at = _naive(episode.created_at)
    for entity in write.structure.entities:
        session.rows(queries.MERGE_ENTITY, uuid=entity.uuid, name=entity.name,
                     group_id=episode.group_id, labels=["Entity", entity.label],
                     created_at=created_at, summary=entity.summary,
                     embedding=write.name_vectors.get(entity.uuid))
        if entity.summary:
            session.rows(queries.SET_SUMMARY, uuid=entity.uuid, summary=entity.summary)
        session.rows(queries.CREATE_MENTION, episode=episode.id, entity=entity.uuid,
                     uuid=f"{episode.id}:{entity.uuid}", group_id=episode.group_id,
                     created_at=created_at)
    for fact in write.structure.facts:
        times = {"valid_at": _naive(fact.valid_at),
                 "invalid_at": _naive(fact.invalid_at) if fact.invalid_at else None}
        if fact.uuid in existing:
            session.rows(queries.RESTATE_FACT, uuid=fact.uuid, fact=fact.fact, **times)
        else:
            session.rows(queries.CREATE_FACT, uuid=fact.uuid, source=fact.source,
                         target=fact.target,
                         group_id=episode.group_id, created_at=created_at, name=fact.name,
                         fact=fact.fact, embedding=write.name_vectors.get(fact.uuid),
                         episode=episode.id, expired_at=None, **times)


def retired_facts(session: Session, episodes: Collection[str] | None = None) -> list[KeptFact]:
    """The facts rewrites retired: of ``episodes`` only, when given (a write's worth of
    history, not all of it)."""
    if episodes is None:
        found = session.rows(queries.RETIRED_FACTS.format(""))
    else:
        found = session.rows(queries.RETIRED_FACTS.format(" AND f.episodes[1] IN $episodes"),
                             episodes=list(episodes))
    return [_kept(row, episode=row[13], expired_at=aware(row[14])) for row in found]


def _kept(row: Sequence[Any], episode: str, expired_at: datetime | None) -> KeptFact:
    """A fact with its ends, from a row's first columns (``queries.FACT_WITH_ENDS``)."""
    (uuid, group, name, text, created, valid, invalid,
     a, a_label, a_name, b, b_label, b_name) = row[:13]
    return KeptFact(uuid=uuid, episode=episode, group_id=group, name=name, fact=text or "",
                    created_at=aware(created), valid_at=aware(valid),
                    invalid_at=aware(invalid) if invalid is not None else None,
                    expired_at=expired_at, source=Entity(a, a_label, a_name),
                    target=Entity(b, b_label, b_name))


def keep_history(session: Session, facts: Sequence[KeptFact], vectors: dict[str, list[float]],
                 again: Collection[str] = ()) -> list[KeptFact]:
    """Write each retired fact its episode does not know yet (``entity_edges``) as it was,
    with its ends, and retire those of ``again`` it states, in one transaction; a fact whose
    episode is not here is left. ``vectors``: fact and entity uuid -> the vector of its text.
    Returns the facts written."""
    with session.transaction():
        return [fact for fact in facts if _keep_fact(session, fact, vectors, again)]


def _keep_fact(session: Session, fact: KeptFact, vectors: dict[str, list[float]],
               again: Collection[str] = ()) -> bool:
    """Write ``fact`` with its ends beside its episode, unless the episode is not here or
    already knows it (then retire it as kept if it is of ``again``); True when written."""
    found = session.rows(queries.EDGES_OF, uuid=fact.episode)
    if not found:
        return False
    if fact.uuid in (edges := list(found[0][0] or [])):
        retired = fact.expired_at
        return retired is not None and fact.uuid in again and bool(session.rows(
            queries.RETIRE_KEPT, uuid=fact.uuid, invalid_at=_naive(fact.invalid_at or retired),
            expired_at=_naive(retired)))
    for entity in (fact.source, fact.target):
        _keep_entity(session, entity, fact.group_id, fact.created_at, vectors)
    session.rows(queries.CREATE_FACT, uuid=fact.uuid, source=fact.source.uuid,
                 target=fact.target.uuid, group_id=fact.group_id,
                 created_at=_naive(fact.created_at), name=fact.name, fact=fact.fact,
                 embedding=vectors.get(fact.uuid), episode=fact.episode,
                 valid_at=_naive(fact.valid_at),
                 invalid_at=_naive(fact.invalid_at) if fact.invalid_at else None,
                 expired_at=_naive(fact.expired_at) if fact.expired_at else None)
    session.rows(queries.SET_EDGES, uuid=fact.episode, edges=[*edges, fact.uuid])
    return True


def _keep_entity(session: Session, entity: Entity, group_id: str, created_at: datetime,
                 vectors: dict[str, list[float]]) -> None:
    session.rows(queries.MERGE_ENTITY, uuid=entity.uuid, name=entity.name, group_id=group_id,
                 labels=list(dict.fromkeys(["Entity", entity.label])),
                 created_at=_naive(created_at), summary=entity.summary,
                 embedding=vectors.get(entity.uuid))


def enriched(session: Session) -> dict[str, str]:
    """Episode id -> the digest of the content graphiti's extraction ran on (enrich.py); none
    before the record's table is made (by the first write of one)."""
    tables = {row[0] for row in session.rows(queries.TABLES)}
    return dict(session.rows(queries.ENRICHED)) if "DualmemEnriched" in tables else {}


def enrichment(session: Session, episode: str) -> tuple[list[Entity], list[KeptFact]]:
    """What ``episode`` mentions and the facts it states now (not those a rewrite retired)."""
    mentions = [Entity(*row) for row in session.rows(queries.MENTIONS_OF, uuid=episode)]
    found = session.rows(queries.EDGES_OF, uuid=episode)
    edges = list(found[0][0] or []) if found else []
    facts = [_kept(row, episode, None) for row in session.rows(queries.CURRENT_FACTS, uuids=edges)]
    return mentions, facts


def keep_enrichments(session: Session, found: Sequence[Enrichment],
                     vectors: dict[str, list[float]]) -> None:
    """Give each episode what graphiti's extraction linked it to, and record it as enriched
    at that digest, in one transaction (the caller checked each episode is here, at it)."""
    session.script(queries.ENRICHED_TABLE)
    at = now()
    with session.transaction():
        for item in found:
            for entity in item.mentions:
                _keep_entity(session, entity, item.group_id, at, vectors)
                if not session.rows(queries.MENTION_OF, episode=item.episode, entity=entity.uuid):
                    session.rows(queries.CREATE_MENTION, episode=item.episode, entity=entity.uuid,
                                 uuid=f"{item.episode}:{entity.uuid}", group_id=item.group_id,
                                 created_at=_naive(at))
            for fact in item.facts:
                _keep_fact(session, fact, vectors)
            session.rows(queries.RECORD_ENRICHED, uuid=item.episode, digest=item.digest)


def count_after(session: Session, after: str) -> int:
    return int(session.rows(queries.COUNT_AFTER, after=after)[0][0])


def unlinked(session: Session, after: str, limit: int) -> list[Episode]:
    """Up to ``limit`` of our episodes past id ``after``, in id order, that hold no entity or
    fact: the rest of an upgrade's work (an episode written since is linked already)."""
    return [_episode(row) for row in session.rows(queries.UNLINKED, after=after, limit=limit)]


def link_episodes(session: Session, writes: Sequence[EpisodeWrite],
                  meta: dict[str, str]) -> None:
    """Give stored episodes their entities, mentions and facts, and record ``meta``, in one
    transaction (an upgrade's step: all of it or none)."""
    with session.transaction():
        for write in writes:
            _link(session, write)
            if write.structure.facts:
                session.rows(queries.SET_EDGES, uuid=write.episode.id,
                             edges=[fact.uuid for fact in write.structure.facts])
        for key, value in meta.items():
            session.rows(queries.PUT_META, key=key, value=value)


def fetch(session: Session, keys: Sequence[str]) -> dict[str, Episode]:
    # A primary-key lookup is an index probe (0.2 ms); `IN` scans the table (4 ms at 12k rows),
    # which only pays off for the long chunks of a scan.
    if len(keys) <= LOOKUPS:
        found = [row for key in keys for row in session.rows(queries.BY_KEY, key=key)]
    else:
        found = session.rows(queries.BY_KEYS, keys=list(keys))
    return {row[0]: _episode(row) for row in found}


def ordered_keys(
    session: Session, groups: Sequence[str] | None, kinds: Sequence[str] | None
) -> list[str]:
    where, params = filters(groups, kinds)
    if where is None:
        return []
    return [row[0] for row in session.rows(queries.ORDERED_KEYS.format(where=where), **params)]


def count(session: Session, groups: Sequence[str] | None, kinds: Sequence[str] | None) -> int:
    where, params = filters(groups, kinds)
    if where is None:
        return 0
    return int(session.rows(queries.COUNT.format(where=where), **params)[0][0])


def every_row(session: Session) -> list[StoredRow]:
    found = session.rows(queries.EVERY_ROW)
    return [StoredRow(_episode(row[:-1]), row[-1]) for row in found]


def _episode(row: list[Any]) -> Episode:
    key, group, kind, name, body, source, created_at, valid_at, valid_at_set, invalid_at = row
    return Episode(
        id=key,
        group_id=group,
        kind=kind,
        name=name,
        body=body,
        source=source,
        created_at=aware(created_at),
        valid_at=aware(valid_at) if valid_at_set else None,
        invalid_at=aware(invalid_at) if invalid_at is not None else None,
    )


def _naive(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None)


def aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC)
