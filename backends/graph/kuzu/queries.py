"""Every Cypher query the embedded graph runs (Kùzu and LadybugDB alike): graphiti's Kùzu schema
(a fact reified as a ``RelatesToNode_`` between two ``Entity`` rows, see ``rows.py``) and our
own tables (``DualmemMeta``, ``DualmemEnriched``). Run on the database's worker thread."""

from __future__ import annotations

from backends.graph.stored import OURS

COLUMNS = (
    "e.uuid, e.group_id, e.kind, e.name, e.content, e.source_description, "
    "e.created_at, e.valid_at, e.valid_at_set, e.invalid_at"
)
BY_KEY = f"MATCH (e:Episodic {{uuid: $key}}) WHERE {OURS} RETURN {COLUMNS}"
BY_KEYS = f"MATCH (e:Episodic) WHERE e.uuid IN $keys AND {OURS} RETURN {COLUMNS}"
CREATE_EPISODE = (
    "CREATE (:Episodic {uuid: $uuid, name: $name, group_id: $group_id, created_at: $created_at,"
    " source: $source, source_description: $source_description, content: $content,"
    " valid_at: $valid_at, entity_edges: $edges, kind: $kind, invalid_at: $invalid_at,"
    " valid_at_set: $valid_at_set, embedding_f16: $embedding})"
)
MERGE_ENTITY = (
    "MERGE (n:Entity {uuid: $uuid}) ON CREATE SET n.name = $name, n.group_id = $group_id,"
    " n.labels = $labels, n.created_at = $created_at, n.summary = $summary,"
    " n.attributes = '{}', n.name_embedding = $embedding"
)
SET_SUMMARY = "MATCH (n:Entity {uuid: $uuid}) WHERE n.summary <> $summary SET n.summary = $summary"
CREATE_FACT = (
    "MATCH (a:Entity {uuid: $source}), (b:Entity {uuid: $target})"
    " CREATE (a)-[:RELATES_TO]->(:RelatesToNode_ {uuid: $uuid, group_id: $group_id,"
    " created_at: $created_at, name: $name, fact: $fact, fact_embedding: $embedding,"
    " episodes: [$episode], expired_at: $expired_at, valid_at: $valid_at,"
    " invalid_at: $invalid_at, reference_time: $valid_at, attributes: '{}'})-[:RELATES_TO]->(b)"
)
RESTATE_FACT = (
    "MATCH (f:RelatesToNode_ {uuid: $uuid}) SET f.fact = $fact, f.valid_at = $valid_at,"
    " f.invalid_at = $invalid_at, f.expired_at = NULL"
)
# A fact its episode no longer states stopped being true then: kept as history, not erased.
RETIRE_FACTS = (
    "MATCH (f:RelatesToNode_) WHERE f.uuid IN $uuids AND f.invalid_at IS NULL"
    " SET f.invalid_at = $at, f.expired_at = $at"
)
# A current fact another memory's extraction had contradicted (graphiti's, ``enrich.py``).
RETIRE_KEPT = (
    "MATCH (f:RelatesToNode_ {uuid: $uuid}) WHERE f.expired_at IS NULL"
    " SET f.invalid_at = $invalid_at, f.expired_at = $expired_at RETURN f.uuid"
)
DELETE_FACTS = (
    "MATCH (a:Entity)-[:RELATES_TO]->(f:RelatesToNode_)-[:RELATES_TO]->(b:Entity)"
    " WHERE f.uuid IN $uuids DETACH DELETE f RETURN a.uuid, b.uuid"
)
# graphiti's own extraction (enrich.py) may leave a fact's valid_at unset, and saves an entity's
# labels in any order (or "Entity" alone).
FACT_COLUMNS = (
    "MATCH (a:Entity)-[:RELATES_TO]->(f:RelatesToNode_)-[:RELATES_TO]->(b:Entity)"
    " RETURN f.uuid, a.uuid, b.uuid, f.episodes[1], coalesce(f.valid_at, f.created_at),"
    " f.invalid_at"
)
LABEL = "coalesce(list_filter({0}.labels, x -> x <> 'Entity')[1], 'Entity')"
# A fact with its ends (``_kept``), as the queries below return it first.
FACT_WITH_ENDS = (
    "f.uuid, f.group_id, f.name, f.fact, f.created_at, coalesce(f.valid_at, f.created_at),"
    f" f.invalid_at, a.uuid, {LABEL.format('a')}, a.name, b.uuid, {LABEL.format('b')}, b.name"
)
# The history a rewrite kept (write_episodes): what a move to another graph carries over.
RETIRED_FACTS = (
    "MATCH (a:Entity)-[:RELATES_TO]->(f:RelatesToNode_)-[:RELATES_TO]->(b:Entity)"
    " WHERE f.expired_at IS NOT NULL{} RETURN " + FACT_WITH_ENDS + ", f.episodes[1], f.expired_at"
)
# An episode's mentions and current facts, as enrich.py left them (graphiti's with ours).
MENTIONS_OF = (
    f"MATCH (:Episodic {{uuid: $uuid}})-[:MENTIONS]->(n:Entity) RETURN n.uuid,"
    f" {LABEL.format('n')}, n.name, coalesce(n.summary, '')"
)
MENTION_OF = "MATCH (:Episodic {uuid: $episode})-[r:MENTIONS]->(:Entity {uuid: $entity}) RETURN r"
CURRENT_FACTS = (
    "MATCH (a:Entity)-[:RELATES_TO]->(f:RelatesToNode_)-[:RELATES_TO]->(b:Entity)"
    " WHERE f.uuid IN $uuids AND f.expired_at IS NULL RETURN " + FACT_WITH_ENDS
)
ENRICHED_TABLE = (
    "CREATE NODE TABLE IF NOT EXISTS DualmemEnriched(uuid STRING PRIMARY KEY, digest STRING)"
)
ENRICHED = "MATCH (d:DualmemEnriched) RETURN d.uuid, d.digest"
RECORD_ENRICHED = "MERGE (d:DualmemEnriched {uuid: $uuid}) SET d.digest = $digest"
MENTION_COLUMNS = (
    "MATCH (e:Episodic)-[:MENTIONS]->(n:Entity) WHERE e.kind IS NOT NULL"
    f" RETURN e.uuid, n.uuid, {LABEL.format('n')}, n.name"
)
CREATE_MENTION = (
    "MATCH (e:Episodic {uuid: $episode}), (n:Entity {uuid: $entity})"
    " CREATE (e)-[:MENTIONS {uuid: $uuid, group_id: $group_id, created_at: $created_at}]->(n)"
)
MENTIONED = "MATCH (:Episodic {uuid: $uuid})-[:MENTIONS]->(n:Entity) RETURN n.uuid"
EDGES_OF = "MATCH (e:Episodic {uuid: $uuid}) RETURN e.entity_edges"
DELETE_EPISODE = "MATCH (e:Episodic {uuid: $uuid}) DETACH DELETE e"
# Entities nothing mentions any more go with their last episode.
DELETE_ORPHANS = (
    "MATCH (n:Entity) WHERE n.uuid IN $uuids"
    " AND NOT EXISTS { MATCH (n)<-[:MENTIONS]-(:Episodic) }"
    " AND NOT EXISTS { MATCH (n)-[:RELATES_TO]-() } DELETE n"
)
# Upgrading a graph of an older schema (upgrade.py): its entities are dropped (their ids and
# what is extracted changed), then every episode not written since is linked again, in batches.
DROP_FACT_NODES = "MATCH (f:RelatesToNode_) DETACH DELETE f"
DROP_ENTITIES = "MATCH (n:Entity) DETACH DELETE n"
UNLINKED = (
    f"MATCH (e:Episodic) WHERE {OURS} AND e.uuid > $after"
    " AND size(e.entity_edges) = 0 AND NOT EXISTS { MATCH (e)-[:MENTIONS]->(:Entity) }"
    f" RETURN {COLUMNS} ORDER BY e.uuid LIMIT $limit"
)
SET_EDGES = "MATCH (e:Episodic {uuid: $uuid}) SET e.entity_edges = $edges"
DROP_META = "MATCH (m:DualmemMeta) WHERE m.key = $key DELETE m"
ENTITY_NAMES = "MATCH (n:Entity) RETURN n.uuid, n.name"
FACT_TEXTS = "MATCH (f:RelatesToNode_) RETURN f.uuid, f.fact"
SET_NAME_EMBEDDING = "MATCH (n:Entity {uuid: $uuid}) SET n.name_embedding = $embedding"
SET_FACT_EMBEDDING = "MATCH (f:RelatesToNode_ {uuid: $uuid}) SET f.fact_embedding = $embedding"
SET_EMBEDDING = "MATCH (e:Episodic {uuid: $uuid}) SET e.embedding_f16 = $embedding"
PUT_META = "MERGE (m:DualmemMeta {key: $key}) SET m.value = $value"
COPY_EPISODES = ("COPY Episodic FROM '{file}'"
                 " (HEADER=false, PARALLEL=false, QUOTE='\"', ESCAPE='\"')")
TABLES = "CALL show_tables() RETURN name"
COUNT_AFTER = f"MATCH (e:Episodic) WHERE {OURS} AND e.uuid > $after RETURN count(e)"
# ``{where}``: ``stored.filters``
ORDERED_KEYS = "MATCH (e:Episodic) WHERE {where} RETURN e.uuid ORDER BY e.created_at, e.uuid"
COUNT = "MATCH (e:Episodic) WHERE {where} RETURN count(e)"
EVERY_ROW = f"MATCH (e:Episodic) WHERE {OURS} RETURN {COLUMNS}, e.embedding_f16"
# Settling graphiti's extraction (kuzu/enrich.py): one MENTIONS edge per entity is kept.
MENTION_PAIRS = (
    "MATCH (e:Episodic {uuid: $uuid})-[r:MENTIONS]->(n:Entity) RETURN n.uuid, collect(r.uuid)"
)
DROP_MENTIONS = "MATCH (:Episodic)-[r:MENTIONS]->(:Entity) WHERE r.uuid IN $uuids DELETE r"
# The schema (database.py): graphiti's tables come from its own DDL; these are ours.
META_TABLE = "CREATE NODE TABLE IF NOT EXISTS DualmemMeta(key STRING PRIMARY KEY, value STRING)"
META = "MATCH (m:DualmemMeta) RETURN m.key, m.value"
CREATE_SCHEMA_VERSION = "CREATE (:DualmemMeta {key: 'schema_version', value: $v})"
ADD_EPISODIC_COLUMN = "ALTER TABLE Episodic ADD IF NOT EXISTS {column}"
# graphiti's full-text indexes (database.py: dropped while anything writes, built again after).
INDEXES = "CALL show_indexes() RETURN *"
CREATE_FTS_INDEX = "CALL CREATE_FTS_INDEX('{table}', '{name}', [{fields}])"
DROP_FTS_INDEX = "CALL DROP_FTS_INDEX('{table}', '{name}')"
# A scan, not a lookup by key (salvage.py): the damaged key index may answer for a lost row.
ROWS_OF_KEY = "MATCH (n:{table}) WHERE concat(n.uuid, '') = $key RETURN count(*)"
