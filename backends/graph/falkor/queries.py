"""Every Cypher query the graph layer sends a FalkorDB server: graphiti's FalkorDB model (a fact
is a ``RELATES_TO`` edge between two entities) and our own nodes (``DualmemMeta``, the change
feed's ``DualmemChange``, ``DualmemEnriched``), and the one query that writes a batch of
episodes whole (``write_batch``). Plain text: a one-shot read over the wire uses ``COLUMNS``
without importing the driver."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from backends.errors import WriteFailed
from backends.graph.stored import OURS
from backends.model import Episode
from backends.search.entities import PLAIN_LABEL, Extraction


def by_uuid(uuids: str, edge: str, source: str = "", target: str = "") -> str:
    """``OPTIONAL MATCH`` of the ``RELATES_TO`` edges whose uuid is in the list ``uuids``, one
    row each (a null ``edge`` when there are none), through the edge index graphiti builds:
    ``OPTIONAL MATCH ()-[r]->() WHERE r.uuid IN list`` scans every node of the graph for
    each row (filling 10k memories took half an hour, most of it that scan), and labelled
    ends (``(a:Entity)``) scan every entity."""
    return (f"UNWIND CASE WHEN size({uuids}) = 0 THEN [null] ELSE {uuids} END AS {edge}_uuid"
            f" OPTIONAL MATCH ({source})-[{edge}:RELATES_TO {{uuid: {edge}_uuid}}]->({target})")


COLUMNS = (
    "e.uuid AS uuid, e.group_id AS group_id, e.kind AS kind, e.name AS name, "
    "e.content AS content, e.source_description AS source, e.created_at AS created_at, "
    "e.valid_at AS valid_at, e.valid_at_set AS valid_at_set, e.invalid_at AS invalid_at"
)
"""the columns of an episode (``rows.episode_of``)"""
INDEXES = (
    "CREATE INDEX FOR (m:DualmemMeta) ON (m.key)",
    "CREATE INDEX FOR (c:DualmemChange) ON (c.uuid, c.seq)",
    "CREATE INDEX FOR (e:Episodic) ON (e.kind)",
    "CREATE INDEX FOR (d:DualmemEnriched) ON (d.uuid)",
)
COUNTER = "MERGE (m:DualmemMeta {key: 'changes'}) ON CREATE SET m.seq = 0"
INSTANCE = ("MERGE (m:DualmemMeta {key: 'instance'}) ON CREATE SET m.value = $value"
             " RETURN m.value AS value")
# A team copy's look at the server (memory.store.team_view): one row, the server's instance
# (None once emptied), its change counter and the position the home's journal reached there.
TEAM_HEAD = (
    "OPTIONAL MATCH (i:DualmemMeta {key: 'instance'})"
    " OPTIONAL MATCH (c:DualmemMeta {key: 'changes'})"
    " OPTIONAL MATCH (j:DualmemMeta {key: $journal})"
    " RETURN i.value AS instance, c.seq AS seq, j.value AS applied"
)
CHANGED_KEYS = "MATCH (c:DualmemChange) WHERE c.seq > $since RETURN c.uuid AS uuid, c.seq AS seq"
# Always one row (the instance, None once emptied), then one per change.
CHANGES = ("OPTIONAL MATCH (i:DualmemMeta {key: 'instance'}) WITH i.value AS instance"
            " OPTIONAL MATCH (c:DualmemChange) WHERE c.seq > $since"
            " RETURN instance, c.uuid AS uuid, c.seq AS seq ORDER BY c.seq")
# The change stamp every write ends with (one query: the counter and the stamp move together).
STAMP = (
    " MATCH (m:DualmemMeta {{key: 'changes'}}) WITH m, m.seq + 1 AS next, {carry}"
    " SET m.seq = next MERGE (c:DualmemChange {{uuid: $uuid}}) SET c.seq = next"
)
_MENTION_COLUMNS = (
    " RETURN e.uuid AS episode, n.uuid AS entity,"
    " coalesce([l IN labels(n) WHERE l <> 'Entity'][0], 'Entity') AS label, n.name AS name"
)
MENTIONS = f"MATCH (e:Episodic)-[:MENTIONS]->(n:Entity) WHERE {OURS}" + _MENTION_COLUMNS
"""every episode's mentions"""
MENTIONS_OF_KEYS = (f"UNWIND $keys AS key MATCH (e:Episodic {{uuid: key}})-[:MENTIONS]->"
                    f"(n:Entity) WHERE {OURS}" + _MENTION_COLUMNS)
"""the mentions of the episodes ``$keys``, a lookup per key (``EPISODES_BY_KEYS``)"""


def listed_facts(keys: str, where: str) -> str:
    """``MATCH`` of the facts ``r`` (between ``a`` and ``b``) the episodes whose uuids are in
    the list ``keys`` name in their ``entity_edges``, once per episode (its uuid: ``key``),
    that hold ``where``: through the edge index. ``MATCH (a:Entity)-[r:RELATES_TO]->(b:Entity)
    WHERE r.episodes[0] IN $keys`` traversed every fact of the graph for a few episodes. A
    fact's first episode names it (written there, kept there when retired)."""
    return (f"UNWIND {keys} AS key MATCH (e:Episodic {{uuid: key}})"
            " UNWIND coalesce(e.entity_edges, []) AS listed WITH DISTINCT key, listed"
            f" MATCH (a)-[r:RELATES_TO {{uuid: listed}}]->(b) WHERE {where}")


FACT_LINKS = (
    " RETURN r.uuid AS fact, a.uuid AS source, b.uuid AS target, r.episodes[0] AS episode,"
    " coalesce(r.valid_at, r.created_at) AS valid_at, r.invalid_at AS invalid_at"
)
FACTS = "MATCH (a:Entity)-[r:RELATES_TO]->(b:Entity)" + FACT_LINKS
"""every fact of the graph"""
FACTS_OF = listed_facts("$keys", "r.episodes[0] = key") + FACT_LINKS
"""the facts of the episodes ``$keys``"""
_DELETE_EPISODE = (
    f"MATCH (e:Episodic {{uuid: $uuid}}) WHERE {OURS}"
    " WITH e, coalesce(e.entity_edges, []) AS facts"
    " OPTIONAL MATCH (e)-[:MENTIONS]->(n:Entity)"
    " WITH e, facts, collect(n.uuid) AS mentioned"
    " WITH e, facts, mentioned " + by_uuid("facts", "r", "a", "b")
    + " WITH e, mentioned, collect(r) AS edges, collect(a.uuid) + collect(b.uuid) AS ends"
    " FOREACH (r IN edges | DELETE r) DETACH DELETE e"
    " WITH mentioned + ends AS dropped"
    + STAMP.format(carry="dropped")
)
DELETE = _DELETE_EPISODE + " RETURN dropped"
# The same over the wire (``purge.py``), whose replies carry no lists: a row per entity it
# dropped (one null when none); no row, no episode.
DELETE_ROWS = (_DELETE_EPISODE + " WITH dropped UNWIND CASE WHEN size(dropped) = 0 THEN [null]"
               " ELSE dropped END AS entity RETURN entity")
# A purged memory's enrichment record (``purge.py``; a delete leaves it, as it holds no text).
FORGET_ENRICHED = "MATCH (d:DualmemEnriched {uuid: $uuid}) DELETE d"
# Entities nothing mentions or relates any more go with their last episode.
DELETE_ORPHANS = (
    "MATCH (n:Entity) WHERE n.uuid IN $uuids"
    " AND NOT (n)<-[:MENTIONS]-(:Episodic) AND NOT (n)-[:RELATES_TO]-() DELETE n"
)
# A fact with its ends (``_kept``), as the queries below return it.
FACT_COLUMNS = (
    "r.uuid AS uuid, r.group_id AS group_id, r.name AS name, r.fact AS fact,"
    " r.created_at AS created_at, coalesce(r.valid_at, r.created_at) AS valid_at,"
    " r.invalid_at AS invalid_at,"
    " a.uuid AS a, [l IN labels(a) WHERE l <> 'Entity'][0] AS a_label, a.name AS a_name,"
    " b.uuid AS b, [l IN labels(b) WHERE l <> 'Entity'][0] AS b_label, b.name AS b_name"
)
_RETIRED_COLUMNS = (" RETURN " + FACT_COLUMNS
                    + ", r.episodes[0] AS episode, r.expired_at AS expired_at")
RETIRED = ("MATCH (a:Entity)-[r:RELATES_TO]->(b:Entity) WHERE r.expired_at IS NOT NULL"
           + _RETIRED_COLUMNS)
RETIRED_OF = (listed_facts("$episodes", "r.expired_at IS NOT NULL AND r.episodes[0] = key")
              + _RETIRED_COLUMNS)
"""the retired facts of the episodes ``$episodes``"""
END = (
    "MERGE ({end}:Entity {{uuid: ${end}.uuid}}) ON CREATE SET {end}:{label},"
    " {end}.name = ${end}.name, {end}.group_id = $group_id, {end}.created_at = $created_at,"
    " {end}.summary = ${end}.summary, {end}.attributes = '{{}}',"
    " {end}.name_embedding = vecf32(${end}.vector)"
)
# A retired fact its episode does not know yet, written as it was, beside it (one query each:
# a move carries few). No row: the episode is not here, or knows the fact already.
KEEP = (
    "MATCH (e:Episodic {{uuid: $uuid}}) WHERE NOT $fact_id IN coalesce(e.entity_edges, [])"
    " {ends} MERGE (a)-[r:RELATES_TO {{uuid: $fact_id}}]->(b)"
    " SET r.group_id = $group_id, r.created_at = $created_at, r.name = $name, r.fact = $fact,"
    " r.fact_embedding = vecf32($vector), r.episodes = [$uuid], r.attributes = '{{}}',"
    " r.valid_at = $valid_at, r.invalid_at = $invalid_at, r.expired_at = $expired_at,"
    " r.reference_time = $valid_at SET e.entity_edges = coalesce(e.entity_edges, []) + $fact_id"
    " WITH e {stamp} RETURN e.uuid AS uuid"
)
# A fact its episode states, that another memory's extraction had contradicted (graphiti's).
RETIRE_KEPT = (
    "MATCH (e:Episodic {{uuid: $uuid}}) WHERE $fact_id IN coalesce(e.entity_edges, [])"
    " MATCH (:Entity)-[r:RELATES_TO {{uuid: $fact_id}}]->(:Entity) WHERE r.expired_at IS NULL"
    " SET r.invalid_at = $invalid_at, r.expired_at = $expired_at WITH e {stamp}"
    " RETURN e.uuid AS uuid"
)
# What an enrichment found (enrich.py), read back for the journal's enriched.jsonl, and
# written again beside its episode in a graph rebuilt from the journal.
ENRICHED = "MATCH (d:DualmemEnriched) RETURN d.uuid AS uuid, d.digest AS digest"
MENTIONS_OF = (
    "MATCH (:Episodic {uuid: $uuid})-[:MENTIONS]->(n:Entity) RETURN n.uuid AS uuid,"
    " coalesce([l IN labels(n) WHERE l <> 'Entity'][0], 'Entity') AS label, n.name AS name,"
    " coalesce(n.summary, '') AS summary"
)
CURRENT_FACTS = listed_facts("[$uuid]", "r.expired_at IS NULL") + " RETURN " + FACT_COLUMNS
KEEP_MENTION = (
    "MATCH (e:Episodic {{uuid: $uuid}}) WHERE e.kind IS NOT NULL {end}"
    " MERGE (e)-[r:MENTIONS {{uuid: $mention}}]->(a)"
    " ON CREATE SET r.group_id = $group_id, r.created_at = $created_at WITH e {stamp}"
)
RECORD_ENRICHED = (
    "MATCH (e:Episodic {uuid: $uuid}) MERGE (d:DualmemEnriched {uuid: $uuid})"
    " SET d.digest = $digest WITH e" + STAMP.format(carry="e")
)
# LLM enrichment's result settled (enrich.py): the episode's facts, one MENTIONS edge per
# entity, the record, and the change stamp that tells every process.
SETTLE = (
    "MATCH (e:Episodic {uuid: $uuid}) WHERE e.kind IS NOT NULL SET e.entity_edges = $edges"
    " WITH e OPTIONAL MATCH (e)-[r:MENTIONS]->(:Entity) WHERE r.uuid IN $doubles"
    " WITH e, collect(r) AS doubled FOREACH (r IN doubled | DELETE r)"
    " MERGE (d:DualmemEnriched {uuid: $uuid}) SET d.digest = $digest"
    " WITH e" + STAMP.format(carry="e")
)
META = "MATCH (m:DualmemMeta) WHERE m.key IN $keys RETURN m.key AS key, m.value AS value"
# What is missing recorded, and the whole record returned, in one query: first openers at once
# agree on one record. In two queries, one read a record half made (the name, no dimension yet)
# and took it for another embedder's: 4 of 120 writers opening a new graph at once.
CLAIM_META = ("UNWIND $entries AS entry MERGE (m:DualmemMeta {key: entry.key})"
               " ON CREATE SET m.value = entry.value RETURN m.key AS key, m.value AS value")
PUT_POSITION = ("MATCH (i:DualmemMeta {key: 'instance'}) WHERE i.value = $instance"
                 " MERGE (m:DualmemMeta {key: $key}) SET m.value = $value RETURN i.value")
# Enrichment on the server (enrich.py): its record, an episode's facts and its mentions.
ENRICHED_AT = "MATCH (d:DualmemEnriched {uuid: $uuid}) RETURN d.digest AS digest"
EDGES = ("MATCH (e:Episodic {uuid: $uuid}) WHERE e.kind IS NOT NULL"
          " RETURN coalesce(e.entity_edges, []) AS edges")
MENTION_PAIRS = ("MATCH (e:Episodic {uuid: $uuid})-[r:MENTIONS]->(n:Entity)"
                  " RETURN n.uuid AS entity, collect(r.uuid) AS edges")


def write_batch(episodes: Sequence[tuple[Episode, str, Extraction, dict[str, list[float]]]],
           at: datetime) -> tuple[str, dict[str, Any]]:
    """One query replacing each of ``episodes`` (episode, vector, structure, name vectors)
    whole: its properties, its mentions, its facts (those it no longer states retired at
    ``at`` and kept), entities created as needed, and one change stamp for them all (a reader
    sees the whole query or none of it). Returns a row per episode: ``uuid``, ``retired``
    (the kept facts), ``dropped`` (entities it no longer names) and ``seq`` (the stamp's)."""
    batch = []
    labels: set[str] = set()
    for episode, vector, structure, name_vectors in episodes:
        by_label: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for entity in structure.entities:
            by_label[plain(entity.label)].append({
                "uuid": entity.uuid, "name": entity.name, "summary": entity.summary,
                "embedding": name_vectors.get(entity.uuid),
                "mention": f"{episode.id}:{entity.uuid}",
            })
        labels.update(by_label)
        facts = [{
            "uuid": fact.uuid, "source": fact.source, "target": fact.target, "name": fact.name,
            "fact": fact.fact, "embedding": name_vectors.get(fact.uuid),
            "valid_at": text(fact.valid_at),
            "invalid_at": text(fact.invalid_at) if fact.invalid_at else None,
        } for fact in structure.facts]
        batch.append({"uuid": episode.id, "props": props(episode, vector),
                      "entities": dict(by_label), "facts": facts,
                      "fact_ids": [fact["uuid"] for fact in facts]})
    mentions = " ".join(
        f"FOREACH (x IN coalesce(w.entities.{label}, []) |"
        " MERGE (n:Entity {uuid: x.uuid})"
        f" ON CREATE SET n:{label}, n.name = x.name, n.group_id = w.props.group_id,"
        " n.created_at = w.props.created_at, n.summary = x.summary, n.attributes = '{}',"
        " n.name_embedding = vecf32(x.embedding)"
        " SET n.summary = CASE WHEN x.summary = '' THEN n.summary ELSE x.summary END"
        " MERGE (e)-[r:MENTIONS {uuid: x.mention}]->(n)"
        " SET r.group_id = w.props.group_id, r.created_at = w.props.created_at)"
        for label in sorted(labels)
    )
    # Rows are carried by their place in $batch (an integer groups the aggregations).
    query = (
        "UNWIND range(0, size($batch) - 1) AS i WITH i, $batch[i] AS w"
        " MERGE (e:Episodic {uuid: w.uuid})"
        " WITH i, w, e, [f IN coalesce(e.entity_edges, []) WHERE NOT f IN w.fact_ids] AS kept"
        " SET e = w.props SET e.entity_edges = w.fact_ids + kept"
        f" WITH i, e, kept {by_uuid('kept', 'old')} WITH i, e, kept, collect(old) AS retiring"
        " FOREACH (r IN retiring | SET r.invalid_at = coalesce(r.invalid_at, $at),"
        " r.expired_at = coalesce(r.expired_at, $at))"
        " WITH i, e, kept OPTIONAL MATCH (e)-[m:MENTIONS]->(n:Entity)"
        " WITH i, e, kept, collect(m) AS olds, collect(n.uuid) AS dropped"
        " WITH i, $batch[i] AS w, e, kept, olds, dropped"
        f" FOREACH (m IN olds | DELETE m) {mentions}"
        " FOREACH (f IN w.facts |"
        " MERGE (a:Entity {uuid: f.source}) MERGE (b:Entity {uuid: f.target})"
        " MERGE (a)-[r:RELATES_TO {uuid: f.uuid}]->(b)"
        " ON CREATE SET r.group_id = w.props.group_id, r.created_at = w.props.created_at,"
        " r.name = f.name, r.fact_embedding = vecf32(f.embedding), r.episodes = [w.uuid],"
        " r.attributes = '{}'"
        " SET r.fact = f.fact, r.valid_at = f.valid_at, r.invalid_at = f.invalid_at,"
        " r.expired_at = NULL, r.reference_time = f.valid_at)"
        " WITH collect({uuid: w.uuid, retired: kept, dropped: dropped}) AS written"
        " MATCH (m:DualmemMeta {key: 'changes'}) WITH written, m, m.seq + 1 AS next"
        " SET m.seq = next"
        " FOREACH (x IN written | MERGE (c:DualmemChange {uuid: x.uuid}) SET c.seq = next)"
        " WITH written, next UNWIND written AS x"
        " RETURN x.uuid AS uuid, x.retired AS retired, x.dropped AS dropped, next AS seq"
    )
    return query, {"batch": batch, "at": text(at)}


def props(episode: Episode, vector: str) -> dict[str, Any]:
    """The node's properties, graphiti's (FalkorDB's times are ISO text) and ours."""
    return {
        "uuid": episode.id,
        "name": episode.name,
        "group_id": episode.group_id,
        "created_at": text(episode.created_at),
        # graphiti's EpisodeType; our own source goes to source_description.
        "source": "json" if episode.data is not None else "text",
        "source_description": episode.source,
        "content": episode.body,
        "valid_at": text(episode.valid_at or episode.created_at),
        "entity_edges": [],
        "kind": episode.kind,
        "invalid_at": text(episode.invalid_at) if episode.invalid_at else None,
        "valid_at_set": episode.valid_at is not None,
        "embedding_f16": vector,
    }


def text(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def plain(label: str) -> str:
    """An entity label, checked: it goes into a query's text."""
    if not PLAIN_LABEL.fullmatch(label):
        raise WriteFailed(f"graph layer: entity label {label!r} is not a plain word")
    return label


# Reads of our episodes (``{where}``: ``stored.filters``).
# A lookup per key: ``e.uuid IN $keys`` kills FalkorDB 4.16.3 (a segfault in RediSearch's
# QueryNode_AddChildren) when a key is a stopword of the label's full-text index (``a``, ``is``).
EPISODES_BY_KEYS = (f"UNWIND $keys AS key MATCH (e:Episodic {{uuid: key}}) WHERE {OURS}"
                    f" RETURN {COLUMNS}")
EVERY_EPISODE = f"MATCH (e:Episodic) WHERE {OURS} RETURN {COLUMNS}, e.embedding_f16 AS vector"
EPISODES = f"MATCH (e:Episodic) WHERE {OURS} RETURN {COLUMNS}"
KEYS_AND_TIMES = "MATCH (e:Episodic) WHERE {where} RETURN e.uuid AS uuid, e.created_at AS at"
COUNT = "MATCH (e:Episodic) WHERE {where} RETURN count(e) AS n"
CHANGES_NOW = "MATCH (m:DualmemMeta {key: 'changes'}) RETURN m.seq AS seq"
POSITION = "MATCH (m:DualmemMeta {key: $key}) RETURN m.value AS seq"
