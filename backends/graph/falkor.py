"""``FalkorBackend``: the graph layer on a FalkorDB server, through graphiti's ``FalkorDriver``.
What is specific to FalkorDB is here: its queries and the change feed. What an episode's
entities and facts are (``search.entities``), the vectors, the in-memory links and the search
(``shared.py``) are the graph layer's own, the same as on Kùzu.

The data model is graphiti's FalkorDB model, so graphiti's own APIs read it: an episode is an
``Episodic`` node under our id (times as ISO-8601 UTC text, as graphiti writes them there; our
properties as in the Kùzu layer: ``kind``, ``invalid_at``, ``valid_at_set``, ``embedding_f16``),
entities are ``Entity`` nodes labelled ``:Entity:File`` (...) with a ``name_embedding``, linked
by ``MENTIONS``, and facts are ``RELATES_TO`` edges between entities (where Kùzu's schema needs
a node in the middle) with ``fact``, ``fact_embedding``, ``episodes`` and validity times. A fact
a rewritten episode no longer states is retired (``invalid_at``, ``expired_at``), not erased.

Many processes write one graph at once, with no lock of ours: FalkorDB runs each query whole
before the next write, and each episode is written by one query. Every write also stamps
``(:DualmemChange {uuid, seq})`` from a counter it advances in the same query, so every process
learns what the others changed (``_sync``, one indexed query before a search or a write) and
keeps its search index and links current. ``get``, ``scan`` and ``count`` read the server.

A graph emptied under us (the server restarted without its data, or the graph dropped) is
noticed by that same query: the graph's instance, recorded at first use, is gone. The call
that finds it raises ``GraphEmptied`` once (a journal is replayed into it by the dual store);
the graph is then prepared again. Given a folder, the index is kept there between opens
(``local_copy``), valid for one instance up to a change counter.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from backends.errors import (
    BackendUnavailable,
    DualmemError,
    GraphEmptied,
    ProviderFailed,
    StoreCorrupt,
    WriteFailed,
)
from backends.graph import server, shared
from backends.graph.address import ServerAddress
from backends.graph.embedder import AnyEmbedder, HashingEmbedder, Vectors, embed
from backends.graph.falkor_rows import COLUMNS, OURS, episode_of, time_of
from backends.graph.history import Enrichment, KeptFact
from backends.graph.index import Entry, EpisodeIndex
from backends.graph.links import GraphLinks
from backends.graph.local_copy import LocalCopy, Note
from backends.graph.rows import decode, encode, filters
from backends.model import (
    DEFAULT_MAX_BODY_BYTES,
    EPISODE_ID,
    Episode,
    Hit,
    Receipt,
    check_filters,
    ensure_body_fits,
    now,
)
from backends.protocol import Enriched, Position
from backends.search.entities import PLAIN_LABEL, Entity, Extraction

if TYPE_CHECKING:
    from backends.graph.enrich import Enricher
from backends.search.ranking import search_text

log = logging.getLogger(__name__)
LAYER = shared.LAYER
FETCH_CHUNK = 256
WRITE_BATCH = 50
"""episodes a write query carries: one query per episode made filling 10k take ~10 times
Kùzu's time; the query's text (parameters included) grows with it"""
_INDEXES = (
    "CREATE INDEX FOR (m:DualmemMeta) ON (m.key)",
    "CREATE INDEX FOR (c:DualmemChange) ON (c.uuid, c.seq)",
    "CREATE INDEX FOR (e:Episodic) ON (e.kind)",
    "CREATE INDEX FOR (d:DualmemEnriched) ON (d.uuid)",
)
_COUNTER = "MERGE (m:DualmemMeta {key: 'changes'}) ON CREATE SET m.seq = 0"
_INSTANCE = ("MERGE (m:DualmemMeta {key: 'instance'}) ON CREATE SET m.value = $value"
             " RETURN m.value AS value")
# Always one row (the instance, None once emptied), then one per change.
_CHANGES = ("OPTIONAL MATCH (i:DualmemMeta {key: 'instance'}) WITH i.value AS instance"
            " OPTIONAL MATCH (c:DualmemChange) WHERE c.seq > $since"
            " RETURN instance, c.uuid AS uuid, c.seq AS seq ORDER BY c.seq")
# The change stamp every write ends with (one query: the counter and the stamp move together).
_STAMP = (
    " MATCH (m:DualmemMeta {{key: 'changes'}}) WITH m, m.seq + 1 AS next, {carry}"
    " SET m.seq = next MERGE (c:DualmemChange {{uuid: $uuid}}) SET c.seq = next"
)
_MENTIONS = (
    "MATCH (e:Episodic)-[:MENTIONS]->(n:Entity) WHERE {where}"
    " RETURN e.uuid AS episode, n.uuid AS entity,"
    " coalesce([l IN labels(n) WHERE l <> 'Entity'][0], 'Entity') AS label, n.name AS name"
)
_FACTS = (
    "MATCH (a:Entity)-[r:RELATES_TO]->(b:Entity) WHERE {where}"
    " RETURN r.uuid AS fact, a.uuid AS source, b.uuid AS target, r.episodes[0] AS episode,"
    " coalesce(r.valid_at, r.created_at) AS valid_at, r.invalid_at AS invalid_at"
)
_DELETE = (
    f"MATCH (e:Episodic {{uuid: $uuid}}) WHERE {OURS}"
    " WITH e, coalesce(e.entity_edges, []) AS facts"
    " OPTIONAL MATCH (e)-[:MENTIONS]->(n:Entity)"
    " WITH e, facts, collect(n.uuid) AS mentioned"
    " OPTIONAL MATCH (a:Entity)-[r:RELATES_TO]->(b:Entity) WHERE r.uuid IN facts"
    " WITH e, mentioned, collect(r) AS edges, collect(a.uuid) + collect(b.uuid) AS ends"
    " FOREACH (r IN edges | DELETE r) DETACH DELETE e"
    " WITH mentioned + ends AS dropped"
    + _STAMP.format(carry="dropped") + " RETURN dropped"
)
# Entities nothing mentions or relates any more go with their last episode.
_DELETE_ORPHANS = (
    "MATCH (n:Entity) WHERE n.uuid IN $uuids"
    " AND NOT (n)<-[:MENTIONS]-(:Episodic) AND NOT (n)-[:RELATES_TO]-() DELETE n"
)
# A fact with its ends (``_kept``), as the queries below return it.
_FACT_COLUMNS = (
    "r.uuid AS uuid, r.group_id AS group_id, r.name AS name, r.fact AS fact,"
    " r.created_at AS created_at, coalesce(r.valid_at, r.created_at) AS valid_at,"
    " r.invalid_at AS invalid_at,"
    " a.uuid AS a, [l IN labels(a) WHERE l <> 'Entity'][0] AS a_label, a.name AS a_name,"
    " b.uuid AS b, [l IN labels(b) WHERE l <> 'Entity'][0] AS b_label, b.name AS b_name"
)
_RETIRED = (
    "MATCH (a:Entity)-[r:RELATES_TO]->(b:Entity) WHERE r.expired_at IS NOT NULL{} RETURN "
    + _FACT_COLUMNS + ", r.episodes[0] AS episode, r.expired_at AS expired_at"
)
_END = (
    "MERGE ({end}:Entity {{uuid: ${end}.uuid}}) ON CREATE SET {end}:{label},"
    " {end}.name = ${end}.name, {end}.group_id = $group_id, {end}.created_at = $created_at,"
    " {end}.summary = ${end}.summary, {end}.attributes = '{{}}',"
    " {end}.name_embedding = vecf32(${end}.vector)"
)
# A retired fact its episode does not know yet, written as it was, beside it (one query each:
# a move carries few). No row: the episode is not here, or knows the fact already.
_KEEP = (
    "MATCH (e:Episodic {{uuid: $uuid}}) WHERE NOT $fact_id IN coalesce(e.entity_edges, [])"
    " {ends} MERGE (a)-[r:RELATES_TO {{uuid: $fact_id}}]->(b)"
    " SET r.group_id = $group_id, r.created_at = $created_at, r.name = $name, r.fact = $fact,"
    " r.fact_embedding = vecf32($vector), r.episodes = [$uuid], r.attributes = '{{}}',"
    " r.valid_at = $valid_at, r.invalid_at = $invalid_at, r.expired_at = $expired_at,"
    " r.reference_time = $valid_at SET e.entity_edges = coalesce(e.entity_edges, []) + $fact_id"
    " WITH e {stamp} RETURN e.uuid AS uuid"
)
# A fact its episode states, that another memory's extraction had contradicted (graphiti's).
_RETIRE_KEPT = (
    "MATCH (e:Episodic {{uuid: $uuid}}) WHERE $fact_id IN coalesce(e.entity_edges, [])"
    " MATCH (:Entity)-[r:RELATES_TO {{uuid: $fact_id}}]->(:Entity) WHERE r.expired_at IS NULL"
    " SET r.invalid_at = $invalid_at, r.expired_at = $expired_at WITH e {stamp}"
    " RETURN e.uuid AS uuid"
)
# What an enrichment found (falkor_enrich.py), read back for the journal's enriched.jsonl, and
# written again beside its episode in a graph rebuilt from the journal.
ENRICHED = "MATCH (d:DualmemEnriched) RETURN d.uuid AS uuid, d.digest AS digest"
_MENTIONS_OF = (
    "MATCH (:Episodic {uuid: $uuid})-[:MENTIONS]->(n:Entity) RETURN n.uuid AS uuid,"
    " coalesce([l IN labels(n) WHERE l <> 'Entity'][0], 'Entity') AS label, n.name AS name,"
    " coalesce(n.summary, '') AS summary"
)
_CURRENT_FACTS = (
    "MATCH (e:Episodic {uuid: $uuid}) MATCH (a:Entity)-[r:RELATES_TO]->(b:Entity)"
    " WHERE r.uuid IN coalesce(e.entity_edges, []) AND r.expired_at IS NULL RETURN "
    + _FACT_COLUMNS
)
_KEEP_MENTION = (
    "MATCH (e:Episodic {{uuid: $uuid}}) WHERE e.kind IS NOT NULL {end}"
    " MERGE (e)-[r:MENTIONS {{uuid: $mention}}]->(a)"
    " ON CREATE SET r.group_id = $group_id, r.created_at = $created_at WITH e {stamp}"
)
_RECORD_ENRICHED = (
    "MATCH (e:Episodic {uuid: $uuid}) MERGE (d:DualmemEnriched {uuid: $uuid})"
    " SET d.digest = $digest WITH e" + _STAMP.format(carry="e")
)
# LLM enrichment's result settled (falkor_enrich.py): the episode's facts, one MENTIONS edge per
# entity, the record, and the change stamp that tells every process.
SETTLE = (
    "MATCH (e:Episodic {uuid: $uuid}) WHERE e.kind IS NOT NULL SET e.entity_edges = $edges"
    " WITH e OPTIONAL MATCH (e)-[r:MENTIONS]->(:Entity) WHERE r.uuid IN $doubles"
    " WITH e, collect(r) AS doubled FOREACH (r IN doubled | DELETE r)"
    " MERGE (d:DualmemEnriched {uuid: $uuid}) SET d.digest = $digest"
    " WITH e" + _STAMP.format(carry="e")
)
_META = "MATCH (m:DualmemMeta) WHERE m.key IN $keys RETURN m.key AS key, m.value AS value"
# What is missing recorded, and the whole record returned, in one query: first openers at once
# agree on one record. In two queries, one read a record half made (the name, no dimension yet)
# and took it for another embedder's: 4 of 120 writers opening a new graph at once.
_CLAIM_META = ("UNWIND $entries AS entry MERGE (m:DualmemMeta {key: entry.key})"
               " ON CREATE SET m.value = entry.value RETURN m.key AS key, m.value AS value")
_PUT_POSITION = ("MATCH (i:DualmemMeta {key: 'instance'}) WHERE i.value = $instance"
                 " MERGE (m:DualmemMeta {key: $key}) SET m.value = $value RETURN i.value")


class FalkorBackend:
    """The graph layer on a FalkorDB server. Open with ``await FalkorBackend.open(address)``."""

    layer = LAYER
    shared = True
    """many processes (and homes) write this graph at once: it is not derived from one journal"""

    def __init__(self, driver: Any, address: ServerAddress, embedder: AnyEmbedder,
                 max_body_bytes: int, copy: LocalCopy | None, llm: Any = None) -> None:
        self._driver: Any | None = driver
        self._llm = llm
        """graphiti's ``LLMClient`` for enrichment (falkor_enrich.py), or None"""
        self._enricher: Enricher | None = None
        self.address = address
        self._embedder = embedder
        self._max_body_bytes = max_body_bytes
        # Every process keeps its own, current with the change feed: kept in a folder
        # (``copy``) or in memory.
        self._copy = copy
        self._index = copy.index if copy is not None else EpisodeIndex.open(
            None, embedder.dimension, embedder.name)
        self._token = ""
        """the index's token (``EpisodeIndex.rebuilt``), recorded with a kept copy"""
        self._links = GraphLinks()
        self._instance: str | None = None
        """the server graph's instance this process knows; another one means it was emptied"""
        self._seen = 0
        """the change counter up to which the index and links hold every process's writes"""
        self._sync_lock = asyncio.Lock()

    @classmethod
    async def open(cls, address: ServerAddress, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                   embedder: AnyEmbedder | None = None, index_folder: Path | None = None,
                   llm: Any = None) -> FalkorBackend:
        """Connect to the graph at ``address`` (created on first use); its search index is
        kept in ``index_folder`` between opens when given (else built in memory). With ``llm``
        (graphiti's ``LLMClient``), free-text memories this process writes are enriched by
        graphiti's extraction in the background (``enrich``). Raises
        ``ServerUnreachable`` when the server does not answer, ``BackendUnavailable`` when it
        is no FalkorDB ("not a FalkorDB server") or stores vectors of another embedder
        ("embedder mismatch")."""
        embedder = embedder or HashingEmbedder()
        driver = await server.connect(address)
        copy = None if index_folder is None else LocalCopy.take(
            index_folder, embedder.dimension, embedder.name)
        store = cls(driver, address, embedder, max_body_bytes, copy, llm)
        try:
            await store._prepare()
            await store._load()
        except BaseException:
            await store.aclose()
            raise
        return store

    # -- the protocol ---------------------------------------------------------------------------

    async def upsert(self, episode: Episode) -> Receipt:
        return (await self.upsert_many([episode]))[0]

    async def upsert_many(self, episodes: Sequence[Episode]) -> list[Receipt]:
        """``upsert`` of each in order (the last of one id wins), ``WRITE_BATCH`` episodes a
        query: if it raises, a part may be stored. An episode the graph holds already,
        unchanged, is not written again (many processes catching up one journal write each
        memory once)."""
        for episode in episodes:
            ensure_body_fits(episode, self._max_body_bytes)
        await self._sync()
        latest = [episode for episode in {e.id: e for e in episodes}.values()
                  if self._index.episode(episode.id) != episode]
        prepared = await shared.prepare(self._embedder, latest)
        for start in range(0, len(prepared), WRITE_BATCH):
            written = prepared[start:start + WRITE_BATCH]
            at = now()
            query, params = _write([(episode, encode(vector), structure, names)
                                    for episode, vector, structure, names in written], at)
            found = {row["uuid"]: row for row in await self._run(query, writing=True, **params)}
            dropped = sorted({key for row in found.values() for key in row["dropped"]})
            if dropped:
                await self._run(_DELETE_ORPHANS, writing=True, uuids=dropped)
            self._remember((episode, vector) for episode, vector, _, _ in written)
            for episode, _, structure, _ in written:
                retired = found[episode.id]["retired"] if episode.id in found else []
                self._links.put(episode, structure, retired, at)
        if self._llm is not None:  # after the write is stored: it never waits for the LLM
            self.enricher.later(latest)
        location = str(self.address)
        return [Receipt.model_construct(id=episode.id, layer=LAYER, location=location,
                                        pending=False) for episode in episodes]

    async def get(self, episode_id: str) -> Episode | None:
        if not EPISODE_ID.fullmatch(episode_id):
            return None
        return (await self._fetch([episode_id])).get(episode_id)

    async def delete(self, episode_id: str) -> bool:
        """The episode, its facts (history included) and the entities nothing else holds."""
        if not EPISODE_ID.fullmatch(episode_id):
            return False
        found = await self._run(_DELETE, writing=True, uuid=episode_id)
        self._forget(episode_id)
        if not found:
            return False
        if found[0]["dropped"]:
            await self._run(_DELETE_ORPHANS, writing=True,
                            uuids=sorted(set(found[0]["dropped"])))
        return True

    async def search(
        self,
        query: str,
        *,
        group_ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 10,
        as_of: datetime | None = None,
    ) -> list[Hit]:
        """The protocol's search (``shared.search``), every process's writes included."""
        self._open_driver()
        if limit <= 0 or not query.strip():
            return []
        await self._sync()
        return await shared.search(self._index, self._links, self._embedder, query,
                                   group_ids=group_ids, kinds=kinds, limit=limit, as_of=as_of)

    async def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        check_filters(group_ids, kinds)
        where, params = filters(group_ids, kinds)
        if where is None:
            return
        found = await self._run(
            f"MATCH (e:Episodic) WHERE {where} RETURN e.uuid AS uuid, e.created_at AS at",
            **params)
        keys = [row["uuid"] for row in sorted(found, key=lambda r: (time_of(r["at"]), r["uuid"]))]
        for start in range(0, len(keys), FETCH_CHUNK):
            chunk = keys[start : start + FETCH_CHUNK]
            episodes = await self._fetch(chunk)
            for key in chunk:
                if key in episodes:  # deleted since the scan began
                    yield episodes[key]

    async def count(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> int:
        check_filters(group_ids, kinds)
        where, params = filters(group_ids, kinds)
        if where is None:
            return 0
        found = await self._run(f"MATCH (e:Episodic) WHERE {where} RETURN count(e) AS n",
                                **params)
        return int(found[0]["n"])

    async def applied(self, epoch: str | None = None) -> Position | None:
        """The position of journal ``epoch`` this graph was last brought up to: many journals
        (homes) feed one server, each with its own position."""
        if epoch is None:
            return None
        found = await self._run("MATCH (m:DualmemMeta {key: $key}) RETURN m.value AS seq",
                                key=f"journal:{epoch}")
        return Position(epoch, int(found[0]["seq"])) if found else None

    async def record_applied(self, position: Position) -> None:
        """Recorded only in the instance this process knows: a position recorded in a graph
        emptied meanwhile would spare its journal the replay it needs."""
        found = await self._run(_PUT_POSITION, writing=True, instance=self._instance,
                                key=f"journal:{position.epoch}", value=str(position.seq))
        if not found:
            await self._sync()  # raises GraphEmptied
            raise WriteFailed("graph layer: the graph changed while its position was recorded")

    async def retired_facts(self, episodes: Collection[str] | None = None) -> list[KeptFact]:
        """The facts rewrites retired and this graph keeps as history (of ``episodes`` only,
        when given), each with the content its memory is at."""
        await self._sync()  # the content is the server's
        if episodes is None:
            found = await self._run(_RETIRED.format(""))
        else:
            found = await self._run(_RETIRED.format(" AND r.episodes[0] IN $episodes"),
                                    episodes=list(episodes))
        return shared.at_content(
            self._index, [_kept(row, row["episode"], time_of(row["expired_at"])) for row in found])

    async def keep_history(self, facts: Sequence[KeptFact]) -> int:
        """Write the retired facts (of another graph) this one lacks beside their episodes, and
        retire again those of memories at the content they were retired at; those of episodes
        it does not hold are left. Returns how many were written."""
        await self._sync()
        vectors = await shared.kept_vectors(self._embedder, facts)
        again = shared.retired_again(self._index, facts)
        written = [fact for fact in facts
                   if (fact.uuid in again and await self._retire_kept(fact))
                   or await self._keep_fact(fact, vectors)]
        shared.learn_history(self._links, written)
        return len(written)

    async def _retire_kept(self, fact: KeptFact) -> bool:
        """Retire ``fact`` as kept where its episode states it; True when it did."""
        assert fact.expired_at is not None  # of ``again``: retired facts only
        found = await self._run(
            _RETIRE_KEPT.format(stamp=_STAMP.format(carry="e")), writing=True,
            uuid=fact.episode, fact_id=fact.uuid, expired_at=_text(fact.expired_at),
            invalid_at=_text(fact.invalid_at or fact.expired_at))
        return bool(found)

    async def _keep_fact(self, fact: KeptFact, vectors: dict[str, list[float]]) -> bool:
        """Write ``fact`` with its ends beside its episode, unless the episode is not here or
        already knows it; True when written."""
        query = _KEEP.format(stamp=_STAMP.format(carry="e"), ends=" ".join(
            _END.format(end=side, label=_plain(entity.label))
            for side, entity in (("a", fact.source), ("b", fact.target))))
        found = await self._run(
            query, writing=True, uuid=fact.episode, fact_id=fact.uuid,
            group_id=fact.group_id, created_at=_text(fact.created_at), name=fact.name,
            fact=fact.fact, vector=vectors[fact.uuid], valid_at=_text(fact.valid_at),
            invalid_at=_text(fact.invalid_at) if fact.invalid_at else None,
            expired_at=_text(fact.expired_at) if fact.expired_at else None,
            a=_end_value(fact.source, vectors), b=_end_value(fact.target, vectors))
        return bool(found)

    async def enriched(self) -> dict[str, str]:
        """Episode id -> the digest of the content graphiti's extraction last ran on, by any
        process (falkor_enrich.py)."""
        return {row["uuid"]: row["digest"] for row in await self._run(ENRICHED)}

    async def enrichments(self, keys: Iterable[str]) -> list[Enrichment]:
        """What graphiti's extraction added to each of these memories, for those enriched at
        the content held now."""
        await self._sync()

        async def linked(key: str) -> shared.Linked:
            mentions = [Entity(row["uuid"], row["label"], row["name"], row["summary"])
                        for row in await self._run(_MENTIONS_OF, uuid=key)]
            return mentions, [_kept(row, key, None)
                              for row in await self._run(_CURRENT_FACTS, uuid=key)]

        return await shared.enrichments(self._index, await self.enriched(), keys, linked)

    async def keep_enrichments(self, found: Sequence[Enrichment]) -> int:
        """Write back what an enrichment found, for the memories held at the content it was
        made from, and record them as enriched: no process asks graphiti again. Returns how
        many were written."""
        await self._sync()
        due = shared.current(self._index, found)
        vectors = await shared.kept_vectors(
            self._embedder, (fact for item in due for fact in item.facts),
            (entity for item in due for entity in item.mentions))
        at = _text(now())
        for item in due:
            for entity in item.mentions:
                await self._run(
                    _KEEP_MENTION.format(end=_END.format(end="a", label=_plain(entity.label)),
                                         stamp=_STAMP.format(carry="e")),
                    writing=True, uuid=item.episode, mention=f"{item.episode}:{entity.uuid}",
                    group_id=item.group_id, created_at=at,
                    a=_end_value(entity, vectors))
            for fact in item.facts:
                await self._keep_fact(fact, vectors)
            await self._run(_RECORD_ENRICHED, writing=True, uuid=item.episode,
                            digest=item.digest)
        shared.learn_enrichments(self._links, due)
        return len(due)

    async def build_graphiti_indexes(self) -> None:
        """Make sure graphiti's own indexes exist, for a graphiti user's ``Graphiti.search``
        over this graph (ours needs none); FalkorDB keeps them current as we write."""
        await self._open_driver().build_indices_and_constraints()

    async def refresh_graphiti_indexes(self) -> None:
        """Nothing to rebuild: FalkorDB's full-text indexes follow every write (Kùzu's do not,
        which is why the embedded layer rebuilds them). Checks they still exist."""
        await self.build_graphiti_indexes()

    async def enrich(self, *, group_ids: Sequence[str] | None = None,
                     progress: Callable[[int, int], None] | None = None) -> Enriched:
        """``Enriches.enrich``: graphiti's LLM extraction (falkor_enrich.py), recorded on the
        server, so a memory another process enriched is not enriched again."""
        return await self.enricher.everything(
            [e async for e in self.scan(group_ids=group_ids)], progress)

    @property
    def enricher(self) -> Enricher:
        if self._llm is None:
            raise ProviderFailed(shared.NO_LLM)
        if self._enricher is None:
            from backends.graph.enrich import Enricher
            from backends.graph.falkor_enrich import FalkorPlace

            self._enricher = Enricher(FalkorPlace(self), self._llm)
        return self._enricher

    async def aclose(self) -> None:
        if self._enricher is not None:
            await self._enricher.stop()
        driver, self._driver = self._driver, None
        if driver is not None:
            if self._copy is None:
                self._index.close()
            else:
                self._copy.close(None if self._instance is None else Note(
                    self._instance, self._seen, self._token, len(self._index)))
            await driver.close()

    # -- keeping the index current --------------------------------------------------------------

    async def _prepare(self) -> None:
        """The graph's indexes, change counter, instance and embedder (made on first use)."""
        for query in _INDEXES:
            await self._run(query)
        await self._run(_COUNTER)
        self._instance = (await self._run(_INSTANCE, value=uuid.uuid4().hex))[0]["value"]
        await self._check_embedder()

    async def _sync(self) -> None:
        """Take in what every process changed since ``_seen``: the episodes, their links.
        ``GraphEmptied`` when the graph lost what it held (it is prepared again, empty)."""
        async with self._sync_lock:
            rows = await self._run(_CHANGES, since=self._seen)
            if rows[0]["instance"] != self._instance:
                await self._renew()
                raise GraphEmptied(str(self.address), "its instance is gone (the server "
                                   "restarted without its data, or the graph was dropped)")
            changes = [row for row in rows if row["uuid"] is not None]
            if not changes:
                return
            keys = list(dict.fromkeys(row["uuid"] for row in changes))
            found = await self._fetch(keys)
            for key in keys:
                self._forget(key)
            fresh = [found[key] for key in keys if key in found]
            vectors = await self._embed_stored(fresh)
            self._remember(zip(fresh, vectors, strict=True))
            await self._load_links({key: episode.group_id for key, episode in found.items()})
            self._seen = max(self._seen, *(int(row["seq"]) for row in changes))

    async def _renew(self) -> None:
        """Start again on a graph that was emptied: prepared anew, nothing indexed."""
        await self._prepare()
        await self.build_graphiti_indexes()
        self._token = self._index.rebuilt([])
        self._links = GraphLinks()
        self._seen = 0

    async def _load(self) -> None:
        """The index and links: a kept copy brought up to date, or built from every row."""
        counter = int((await self._run(
            "MATCH (m:DualmemMeta {key: 'changes'}) RETURN m.seq AS seq"))[0]["seq"])
        # read first: what changes while loading is seen
        note = None if self._copy is None or self._instance is None else self._copy.usable(
            self._instance, counter)
        if note is not None:
            self._token, self._seen = note.token, note.seen
            groups = {}
            for key, group, kind in self._index.places():
                self._links.add_place(key, group, kind)
                groups[key] = group
            await self._load_links(groups, every=True)
            await self._sync()
            return
        self._seen = counter
        found = await self._run(
            f"MATCH (e:Episodic) WHERE {OURS} RETURN {COLUMNS}, e.embedding_f16 AS vector")
        episodes = [episode_of(row) for row in found]
        stored = [decode(row["vector"], self._embedder.dimension) for row in found]
        missing = iter(await self._embed_stored(
            [e for e, v in zip(episodes, stored, strict=True) if v is None]))
        vectors = [next(missing) if vector is None else vector for vector in stored]
        for episode in episodes:
            self._links.add_place(episode.id, episode.group_id, episode.kind)
        self._token = self._index.rebuilt([Entry(episode, search_text(episode), vector)
                                           for episode, vector in zip(episodes, vectors,
                                                                      strict=True)])
        await self._load_links({episode.id: episode.group_id for episode in episodes},
                               every=True)

    async def _load_links(self, groups: dict[str, str], *, every: bool = False) -> None:
        """The mentions and facts of the episodes of ``groups`` (id -> group); ``every``: they
        are all the graph's episodes (no filter needed)."""
        if not groups:
            return
        params: dict[str, Any] = {} if every else {"keys": list(groups)}
        mentions = await self._run(_MENTIONS.format(
            where=f"{OURS}" + ("" if every else " AND e.uuid IN $keys")), **params)
        facts = await self._run(_FACTS.format(
            where="true" if every else "r.episodes[0] IN $keys"), **params)
        shared.add_links(
            self._links, groups,
            [(r["episode"], r["entity"], r["label"], r["name"]) for r in mentions],
            [(r["fact"], r["source"], r["target"], r["episode"], time_of(r["valid_at"]),
              time_of(r["invalid_at"]) if r["invalid_at"] else None) for r in facts])

    async def _embed_stored(self, episodes: Sequence[Episode]) -> list[Vectors]:
        """Vectors for episodes read from the server (a remote embedder that is down leaves
        them to the words: zero vectors)."""
        if not episodes:
            return []
        try:
            return list(await embed(self._embedder, [search_text(e) for e in episodes]))
        except ProviderFailed as exc:
            log.warning("indexing without vectors: %s", exc)
            return [np.zeros(self._embedder.dimension, dtype=np.float32) for _ in episodes]

    async def _check_embedder(self) -> None:
        """The graph's vectors are of the embedder its first opener recorded (a read, once it
        is recorded)."""
        want = {"embedder": self._embedder.name, "dimension": str(self._embedder.dimension)}
        have = {row["key"]: row["value"] for row in await self._run(_META, keys=list(want))}
        if len(have) < len(want):
            have = {row["key"]: row["value"] for row in await self._run(
                _CLAIM_META, writing=True,
                entries=[{"key": key, "value": value} for key, value in want.items()])}
        if have != want:
            raise BackendUnavailable(
                LAYER, "embedder mismatch",
                f"the server's graph holds {have.get('embedder')}/{have.get('dimension')} "
                f"vectors, this process embeds with {want['embedder']}/{want['dimension']}")

    def _remember(self, written: Iterable[tuple[Episode, Vectors]]) -> None:
        entries = []
        for episode, vector in written:
            self._links.add_place(episode.id, episode.group_id, episode.kind)
            entries.append(Entry(episode, search_text(episode), vector))
        self._index.put(entries)

    def _forget(self, key: str) -> None:
        self._index.drop(key)
        self._links.drop(key)

    # -- the server -----------------------------------------------------------------------------

    async def _fetch(self, keys: Sequence[str]) -> dict[str, Episode]:
        if not keys:
            return {}
        found = await self._run(
            f"MATCH (e:Episodic) WHERE e.uuid IN $keys AND {OURS} RETURN {COLUMNS}",
            keys=list(keys))
        try:
            return {row["uuid"]: episode_of(row) for row in found}
        except (DualmemError, ValueError, TypeError, KeyError) as exc:
            raise StoreCorrupt(str(self.address), f"a row is no valid episode: {exc}") from exc

    async def _run(self, query: str, *, writing: bool = False,
                   **params: Any) -> list[dict[str, Any]]:
        driver = self._open_driver()
        try:
            result = await driver.execute_query(query, **params)
        except Exception as exc:
            error = server.translate(self.address, exc)
            if writing:
                error.__cause__ = exc
                raise WriteFailed(f"graph layer: {error}") from error
            raise error from exc
        # None: the driver's answer to an index that exists already (nothing to return).
        return [] if result is None else list(result[0])

    def _open_driver(self) -> Any:
        if self._driver is None:
            raise BackendUnavailable(LAYER, "closed")
        return self._driver


def _write(episodes: Sequence[tuple[Episode, str, Extraction, dict[str, list[float]]]],
           at: datetime) -> tuple[str, dict[str, Any]]:
    """One query replacing each of ``episodes`` (episode, vector, structure, name vectors)
    whole: its properties, its mentions, its facts (those it no longer states retired at
    ``at`` and kept), entities created as needed, and one change stamp for them all (a reader
    sees the whole query or none of it). Returns a row per episode: ``uuid``, ``retired``
    (the kept facts) and ``dropped`` (entities it no longer names)."""
    batch = []
    labels: set[str] = set()
    for episode, vector, structure, name_vectors in episodes:
        by_label: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for entity in structure.entities:
            by_label[_plain(entity.label)].append({
                "uuid": entity.uuid, "name": entity.name, "summary": entity.summary,
                "embedding": name_vectors.get(entity.uuid),
                "mention": f"{episode.id}:{entity.uuid}",
            })
        labels.update(by_label)
        facts = [{
            "uuid": fact.uuid, "source": fact.source, "target": fact.target, "name": fact.name,
            "fact": fact.fact, "embedding": name_vectors.get(fact.uuid),
            "valid_at": _text(fact.valid_at),
            "invalid_at": _text(fact.invalid_at) if fact.invalid_at else None,
        } for fact in structure.facts]
        batch.append({"uuid": episode.id, "props": _props(episode, vector),
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
        " WITH i, e, kept OPTIONAL MATCH ()-[old:RELATES_TO]->() WHERE old.uuid IN kept"
        " WITH i, e, kept, collect(old) AS retiring"
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
        " WITH written UNWIND written AS x"
        " RETURN x.uuid AS uuid, x.retired AS retired, x.dropped AS dropped"
    )
    return query, {"batch": batch, "at": _text(at)}


def _props(episode: Episode, vector: str) -> dict[str, Any]:
    """The node's properties, graphiti's (FalkorDB's times are ISO text) and ours."""
    return {
        "uuid": episode.id,
        "name": episode.name,
        "group_id": episode.group_id,
        "created_at": _text(episode.created_at),
        # graphiti's EpisodeType; our own source goes to source_description.
        "source": "json" if episode.data is not None else "text",
        "source_description": episode.source,
        "content": episode.body,
        "valid_at": _text(episode.valid_at or episode.created_at),
        "entity_edges": [],
        "kind": episode.kind,
        "invalid_at": _text(episode.invalid_at) if episode.invalid_at else None,
        "valid_at_set": episode.valid_at is not None,
        "embedding_f16": vector,
    }


def _text(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def _plain(label: str) -> str:
    """An entity label, checked: it goes into a query's text."""
    if not PLAIN_LABEL.fullmatch(label):
        raise WriteFailed(f"graph layer: entity label {label!r} is not a plain word")
    return label


def _end_value(entity: Entity, vectors: dict[str, list[float]]) -> dict[str, Any]:
    """An entity as ``_END`` takes it."""
    return {"uuid": entity.uuid, "name": entity.name, "summary": entity.summary,
            "vector": vectors[entity.uuid]}


def _kept(row: dict[str, Any], episode: str, expired_at: datetime | None) -> KeptFact:
    """A fact with its ends, from a row of ``_FACT_COLUMNS``."""
    return KeptFact(
        uuid=row["uuid"], episode=episode, group_id=row["group_id"], name=row["name"],
        fact=row["fact"] or "", created_at=time_of(row["created_at"]),
        valid_at=time_of(row["valid_at"]),
        invalid_at=time_of(row["invalid_at"]) if row["invalid_at"] else None,
        expired_at=expired_at, source=_end(row, "a"), target=_end(row, "b"))


def _end(row: dict[str, Any], side: str) -> Entity:
    return Entity(row[side], row[f"{side}_label"] or "Entity", row[f"{side}_name"])
