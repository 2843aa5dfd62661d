"""``FalkorBackend``: the graph layer on a FalkorDB server, through graphiti's ``FalkorDriver``.
What is specific to FalkorDB is here; the rest is the graph layer's own (the index, the
embedder, the structure, the row encoding).

The data model is graphiti's FalkorDB model: an episode is an ``Episodic`` node under our id
(times as ISO-8601 UTC text, as graphiti writes them there; our columns as in the Kùzu layer:
``kind``, ``invalid_at``, ``valid_at_set``, ``embedding_f16``), entities named in JSON bodies are
``Entity`` nodes labelled ``:Entity:File`` (...) and linked by ``MENTIONS``.

Many processes write one graph at once, with no lock of ours: FalkorDB runs each query whole
before the next write, and each batch of episodes is one query. Every write also stamps
``(:DualmemChange {uuid, seq})`` from a counter it advances in the same query, so every process
learns what the others changed (``_sync``, one indexed query before a search) and keeps its
search index current. ``get``, ``scan`` and ``count`` read the server itself.
"""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from backends.errors import BackendUnavailable, DualmemError, StoreCorrupt, WriteFailed
from backends.graph import server
from backends.graph.address import ServerAddress
from backends.graph.embedder import Embedder, HashingEmbedder, Vectors
from backends.graph.index import Entry, EpisodeIndex
from backends.graph.rows import decode, encode
from backends.graph.structure import Entity, extract
from backends.model import (
    DEFAULT_MAX_BODY_BYTES,
    EPISODE_ID,
    Episode,
    Hit,
    Receipt,
    ensure_body_fits,
)
from backends.protocol import Position
from backends.ranking import search_text

LAYER = "graph"
FETCH_CHUNK = 256
_LABEL = re.compile(r"[A-Z][A-Za-z]{0,63}")
_OURS = "e.kind IS NOT NULL"
_COLUMNS = (
    "e.uuid AS uuid, e.group_id AS group_id, e.kind AS kind, e.name AS name, "
    "e.content AS content, e.source_description AS source, e.created_at AS created_at, "
    "e.valid_at AS valid_at, e.valid_at_set AS valid_at_set, e.invalid_at AS invalid_at"
)
_INDEXES = (
    "CREATE INDEX FOR (m:DualmemMeta) ON (m.key)",
    "CREATE INDEX FOR (c:DualmemChange) ON (c.uuid, c.seq)",
    "CREATE INDEX FOR (e:Episodic) ON (e.kind)",
)
_COUNTER = "MERGE (m:DualmemMeta {key: 'changes'}) ON CREATE SET m.seq = 0"
_CHANGES = ("MATCH (c:DualmemChange) WHERE c.seq > $since "
            "RETURN c.uuid AS uuid, c.seq AS seq ORDER BY c.seq")
_DELETE = (
    f"MATCH (e:Episodic {{uuid: $uuid}}) WHERE {_OURS}"
    " OPTIONAL MATCH (e)-[:MENTIONS]->(n:Entity)"
    " WITH e, collect(n.uuid) AS dropped DETACH DELETE e"
    " WITH dropped MATCH (m:DualmemMeta {key: 'changes'})"
    " WITH dropped, m, m.seq + 1 AS next SET m.seq = next"
    " MERGE (c:DualmemChange {uuid: $uuid}) SET c.seq = next RETURN dropped"
)
# Entities nothing mentions or relates any more go with their last episode.
_DELETE_ORPHANS = (
    "MATCH (n:Entity) WHERE n.uuid IN $uuids"
    " AND NOT (n)<-[:MENTIONS]-(:Episodic) AND NOT (n)-[:RELATES_TO]-() DELETE n"
)
_PUT_META = "MERGE (m:DualmemMeta {key: $key}) SET m.value = $value"


class FalkorBackend:
    """The graph layer on a FalkorDB server. Open with ``await FalkorBackend.open(address)``."""

    layer = LAYER
    shared = True
    """many processes (and homes) write this graph at once: it is not derived from one journal"""

    def __init__(self, driver: Any, address: ServerAddress, embedder: Embedder,
                 max_body_bytes: int, meta: dict[str, str]) -> None:
        self._driver: Any | None = driver
        self.address = address
        self._embedder = embedder
        self._max_body_bytes = max_body_bytes
        self._meta = meta
        self._index = EpisodeIndex(embedder.dimension)
        self._episodes: dict[str, Episode] = {}
        self._seen = 0
        """the change counter up to which ``_index`` holds every process's writes"""
        self._sync_lock = asyncio.Lock()

    @classmethod
    async def open(cls, address: ServerAddress, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                   embedder: Embedder | None = None) -> FalkorBackend:
        """Connect to the graph at ``address`` (created on first use). Raises
        ``ServerUnreachable`` when the server does not answer, ``BackendUnavailable`` when it
        is no FalkorDB ("not a FalkorDB server") or stores vectors of another embedder
        ("embedder mismatch")."""
        embedder = embedder or HashingEmbedder()
        driver = await server.connect(address)
        store = cls(driver, address, embedder, max_body_bytes, {})
        try:
            for query in _INDEXES:
                await store._run(query)
            await store._run(_COUNTER)
            store._meta = {row["key"]: row["value"] for row in await store._run(
                "MATCH (m:DualmemMeta) WHERE m.value IS NOT NULL "
                "RETURN m.key AS key, m.value AS value")}
            await store._check_embedder()
            await store._load()
        except BaseException:
            await store.aclose()
            raise
        return store

    # -- the protocol ---------------------------------------------------------------------------

    async def upsert(self, episode: Episode) -> Receipt:
        return (await self.upsert_many([episode]))[0]

    async def upsert_many(self, episodes: Sequence[Episode]) -> list[Receipt]:
        """``upsert`` of each in order (the last of one id wins), all in one query: all or none.
        An episode the graph holds already, unchanged, is not written again."""
        for episode in episodes:
            ensure_body_fits(episode, self._max_body_bytes)
        await self._sync()
        latest = [episode for episode in {e.id: e for e in episodes}.values()
                  if self._episodes.get(episode.id) != episode]
        if latest:
            vectors = self._embedder.embed([search_text(episode) for episode in latest])
            rows, labels = _batch(latest, vectors)
            found = await self._run(_write_query(labels), writing=True, batch=rows)
            dropped = sorted({uuid for row in found for uuid in row["dropped"]})
            if dropped:
                await self._run(_DELETE_ORPHANS, writing=True, uuids=dropped)
            self._remember(zip(latest, vectors, strict=True))
        location = str(self.address)
        return [Receipt.model_construct(id=episode.id, layer=LAYER, location=location,
                                        pending=False) for episode in episodes]

    async def get(self, episode_id: str) -> Episode | None:
        if not EPISODE_ID.fullmatch(episode_id):
            return None
        return (await self._fetch([episode_id])).get(episode_id)

    async def delete(self, episode_id: str) -> bool:
        if not EPISODE_ID.fullmatch(episode_id):
            return False
        found = await self._run(_DELETE, writing=True, uuid=episode_id)
        self._forget(episode_id)
        if not found:
            return False
        if found[0]["dropped"]:
            await self._run(_DELETE_ORPHANS, writing=True, uuids=found[0]["dropped"])
        return True

    async def search(
        self,
        query: str,
        *,
        group_ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 10,
    ) -> list[Hit]:
        self._open_driver()
        if limit <= 0 or not query.strip():
            return []
        await self._sync()
        vector = self._embedder.embed([query])[0]
        ranked = self._index.search(query, vector, groups=group_ids, kinds=kinds, limit=limit)
        return [Hit(episode=self._episodes[key], score=score, layer=LAYER)
                for key, score in ranked]

    async def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        where, params = _filters(group_ids, kinds)
        if where is None:
            return
        found = await self._run(
            f"MATCH (e:Episodic) WHERE {where} RETURN e.uuid AS uuid, e.created_at AS at",
            **params)
        keys = [row["uuid"] for row in sorted(found, key=lambda r: (_time(r["at"]), r["uuid"]))]
        for start in range(0, len(keys), FETCH_CHUNK):
            chunk = keys[start : start + FETCH_CHUNK]
            episodes = await self._fetch(chunk)
            for key in chunk:
                if key in episodes:  # deleted since the scan began
                    yield episodes[key]

    async def count(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> int:
        where, params = _filters(group_ids, kinds)
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
        await self._run(_PUT_META, writing=True, key=f"journal:{position.epoch}",
                        value=str(position.seq))

    async def aclose(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            await driver.close()

    # -- keeping the index current --------------------------------------------------------------

    async def _sync(self) -> None:
        """Take in what every process changed since ``_seen``."""
        async with self._sync_lock:
            changes = await self._run(_CHANGES, since=self._seen)
            if not changes:
                return
            keys = list(dict.fromkeys(row["uuid"] for row in changes))
            found = await self._fetch(keys)
            fresh = [found[key] for key in keys if key in found]
            for key in keys:
                if key not in found:
                    self._forget(key)
            vectors = self._embedder.embed([search_text(episode) for episode in fresh])
            self._remember(zip(fresh, vectors, strict=True))
            self._seen = max(self._seen, *(int(row["seq"]) for row in changes))

    async def _load(self) -> None:
        counter = await self._run("MATCH (m:DualmemMeta {key: 'changes'}) RETURN m.seq AS seq")
        self._seen = int(counter[0]["seq"])  # read first: what changes while loading is seen
        found = await self._run(
            f"MATCH (e:Episodic) WHERE {_OURS} RETURN {_COLUMNS}, e.embedding_f16 AS vector")
        episodes = [_episode(row) for row in found]
        stored = [decode(row["vector"], self._embedder.dimension) for row in found]
        missing = iter(self._embedder.embed(
            [search_text(e) for e, v in zip(episodes, stored, strict=True) if v is None]))
        self._remember((episode, next(missing) if vector is None else vector)
                       for episode, vector in zip(episodes, stored, strict=True))

    async def _check_embedder(self) -> None:
        want = {"embedder": self._embedder.name, "dimension": str(self._embedder.dimension)}
        have = {key: self._meta[key] for key in want if key in self._meta}
        if have and have != want:
            raise BackendUnavailable(
                LAYER, "embedder mismatch",
                f"the server's graph holds {have.get('embedder')}/{have.get('dimension')} "
                f"vectors, this process embeds with {want['embedder']}/{want['dimension']}")
        for key, value in want.items():
            if key not in have:
                await self._run(_PUT_META, writing=True, key=key, value=value)

    def _remember(self, written: Iterable[tuple[Episode, Vectors]]) -> None:
        entries = []
        for episode, vector in written:
            self._episodes[episode.id] = episode
            entries.append(Entry(episode.id, search_text(episode), episode.group_id,
                                 episode.kind, vector))
        self._index.put(entries)

    def _forget(self, key: str) -> None:
        self._episodes.pop(key, None)
        self._index.drop(key)

    # -- the server -----------------------------------------------------------------------------

    async def _fetch(self, keys: Sequence[str]) -> dict[str, Episode]:
        if not keys:
            return {}
        found = await self._run(
            f"MATCH (e:Episodic) WHERE e.uuid IN $keys AND {_OURS} RETURN {_COLUMNS}",
            keys=list(keys))
        try:
            return {row["uuid"]: _episode(row) for row in found}
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
                raise WriteFailed(f"graph layer: {error}") from exc
            raise error from exc
        # None: the driver's answer to an index that exists already (nothing to return).
        return [] if result is None else list(result[0])

    def _open_driver(self) -> Any:
        if self._driver is None:
            raise BackendUnavailable(LAYER, "closed")
        return self._driver


def _write_query(labels: Sequence[str]) -> str:
    """One query writing a batch: each episode replaced whole with its mentions, the change
    counter advanced by the batch's size, each episode stamped with its change."""
    mentions = " ".join(
        f"FOREACH (x IN w.entities.{label} |"
        " MERGE (n:Entity {uuid: x.uuid})"
        f" ON CREATE SET n:{label}, n.name = x.name, n.group_id = w.props.group_id,"
        " n.created_at = w.props.created_at, n.summary = '', n.attributes = '{}'"
        " MERGE (e)-[r:MENTIONS {uuid: x.mention}]->(n)"
        " SET r.group_id = w.props.group_id, r.created_at = w.props.created_at)"
        for label in labels
    )
    return (
        "MATCH (m:DualmemMeta {key: 'changes'})"
        " WITH m, m.seq AS base SET m.seq = base + size($batch)"
        " WITH base UNWIND range(0, size($batch) - 1) AS i"
        " WITH base + i + 1 AS seq, $batch[i] AS w"
        " MERGE (e:Episodic {uuid: w.props.uuid}) SET e = w.props"
        " WITH e, w, seq OPTIONAL MATCH (e)-[old:MENTIONS]->(n:Entity)"
        " WITH e, w, seq, collect(old) AS olds, collect(n.uuid) AS dropped"
        " FOREACH (o IN olds | DELETE o) "
        f"{mentions}"
        " MERGE (c:DualmemChange {uuid: w.props.uuid}) SET c.seq = seq"
        " RETURN dropped"
    )


def _batch(episodes: Sequence[Episode], vectors: Iterable[Vectors]
           ) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    labels: set[str] = set()
    for episode, vector in zip(episodes, vectors, strict=True):
        by_label: dict[str, list[dict[str, str]]] = defaultdict(list)
        for entity in extract(episode.group_id, episode.data):
            by_label[_checked(entity)].append(
                {"uuid": entity.uuid, "name": entity.name,
                 "mention": f"{episode.id}:{entity.uuid}"})
        labels.update(by_label)
        rows.append({"props": _props(episode, encode(vector)), "entities": by_label})
    ordered = sorted(labels)
    for row in rows:  # every row names every label of the batch, empty where it has none
        row["entities"] = {label: row["entities"].get(label, []) for label in ordered}
    return rows, ordered


def _checked(entity: Entity) -> str:
    # A label goes into the query's text (FalkorDB takes no label parameters).
    if not _LABEL.fullmatch(entity.label):
        raise WriteFailed(f"graph layer: entity label {entity.label!r} is not a plain word")
    return entity.label


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


def _episode(row: dict[str, Any]) -> Episode:
    return Episode(
        id=row["uuid"],
        group_id=row["group_id"],
        kind=row["kind"],
        name=row["name"],
        body=row["content"],
        source=row["source"],
        created_at=_time(row["created_at"]),
        valid_at=_time(row["valid_at"]) if row["valid_at_set"] else None,
        invalid_at=_time(row["invalid_at"]) if row["invalid_at"] is not None else None,
    )


def _filters(groups: Sequence[str] | None, kinds: Sequence[str] | None
             ) -> tuple[str | None, dict[str, Any]]:
    """The WHERE clause, or None when a filter is an empty list (nothing can match)."""
    clauses, params = [_OURS], {}
    for column, values in (("group_id", groups), ("kind", kinds)):
        if values is None:
            continue
        if not values:
            return None, {}
        clauses.append(f"e.{column} IN ${column}")
        params[column] = list(values)
    return " AND ".join(clauses), params


def _text(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value).astimezone(UTC)
