"""``FalkorBackend``: the graph layer on a FalkorDB server, through graphiti's ``FalkorDriver``.
Its collaborators: the ``Connection`` (queries, failures named as ours), the ``Mirror`` (this
process's index and links, current with the change feed), ``Kept`` (history and enrichments);
the Cypher is in ``queries.py``. What an episode's entities and facts are
(``backends.search.entities``), the vectors, the in-memory links and the search (``shared.py``) are
the graph layer's own, the same as on Kùzu.

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
learns what the others changed (``Mirror.sync``, one indexed query before a search or a write)
and keeps its search index and links current. ``get``, ``scan`` and ``count`` read the server.

A graph emptied under us (the server restarted without its data, or the graph dropped) is
noticed by that same query: the graph's instance, recorded at first use, is gone. The call
that finds it raises ``GraphEmptied`` once (a journal is replayed into it by the dual store);
the graph is then prepared again. Given a folder, the index is kept there between opens
(``local_copy``), valid for one instance up to a change counter.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backends.errors import ProviderFailed, WriteFailed
from backends.graph import shared
from backends.graph.address import ServerAddress
from backends.graph.embedder import AnyEmbedder, HashingEmbedder
from backends.graph.falkor import queries, server
from backends.graph.falkor.connection import Connection
from backends.graph.falkor.kept import Kept
from backends.graph.falkor.local_copy import LocalCopy
from backends.graph.falkor.mirror import Mirror
from backends.graph.falkor.rows import time_of
from backends.graph.history import Enrichment, KeptFact
from backends.graph.stored import encode, filters
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
from backends.protocol import Enriched, KnownEntity, KnownFact, Position

if TYPE_CHECKING:
    from backends.graph.enrich import Enricher

LAYER = shared.LAYER
FETCH_CHUNK = 256
WRITE_BATCH = 50
"""episodes a write query carries: one query per episode made filling 10k take ~10 times
Kùzu's time; the query's text (parameters included) grows with it"""


class FalkorBackend:
    """The graph layer on a FalkorDB server. Open with ``await FalkorBackend.open(address)``."""

    layer = LAYER
    shared = True
    """many processes (and homes) write this graph at once: it is not derived from one journal"""

    def __init__(self, connection: Connection, embedder: AnyEmbedder, max_body_bytes: int,
                 copy: LocalCopy | None, llm: Any = None) -> None:
        self.connection = connection
        self.address = connection.address
        self._embedder = embedder
        self._max_body_bytes = max_body_bytes
        self.mirror = Mirror(connection, embedder, copy)
        self.kept = Kept(connection, self.mirror)
        self._llm = llm
        """graphiti's ``LLMClient`` for enrichment (enrich.py), or None"""
        self._enricher: Enricher | None = None

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
        store = cls(Connection(driver, address), embedder, max_body_bytes, copy, llm)
        try:
            await store.mirror.prepare()
            await store.mirror.load()
        except BaseException:
            await store.aclose()
            raise
        return store

    async def upsert(self, episode: Episode) -> Receipt:
        return (await self.upsert_many([episode]))[0]

    async def upsert_many(self, episodes: Sequence[Episode]) -> list[Receipt]:
        """``upsert`` of each in order (the last of one id wins), ``WRITE_BATCH`` episodes a
        query: if it raises, a part may be stored. An episode the graph holds already,
        unchanged, is not written again (many processes catching up one journal write each
        memory once)."""
        for episode in episodes:
            ensure_body_fits(episode, self._max_body_bytes)
        mirror, run = self.mirror, self.connection.run
        await mirror.sync()
        latest = [episode for episode in {e.id: e for e in episodes}.values()
                  if mirror.index.episode(episode.id) != episode]
        prepared = await shared.prepare(self._embedder, latest)
        done: list[tuple[Sequence[shared.Prepared], list[dict[str, Any]], datetime]] = []
        try:
            for start in range(0, len(prepared), WRITE_BATCH):
                written, at = prepared[start:start + WRITE_BATCH], now()
                query, params = queries.write_batch(
                    [(episode, encode(vector), structure, names)
                     for episode, vector, structure, names in written], at)
                found = await run(query, writing=True, **params)
                done.append((written, found, at))
                dropped = sorted({key for row in found for key in row["dropped"]})
                if dropped:
                    await run(queries.DELETE_ORPHANS, writing=True, uuids=dropped)
        finally:
            mirror.took(done)
        if self._llm is not None:  # after the write is stored: it never waits for the LLM
            self.enricher.later(latest)
        location = str(self.address)
        return [Receipt.model_construct(id=episode.id, layer=LAYER, location=location,
                                        pending=False) for episode in episodes]

    async def get(self, episode_id: str) -> Episode | None:
        if not EPISODE_ID.fullmatch(episode_id):
            return None
        return (await self.connection.fetch([episode_id])).get(episode_id)

    async def delete(self, episode_id: str) -> bool:
        """The episode, its facts (history included) and the entities nothing else holds."""
        if not EPISODE_ID.fullmatch(episode_id):
            return False
        found = await self.connection.run(queries.DELETE, writing=True, uuid=episode_id)
        self.mirror.forget(episode_id)
        if not found:
            return False
        if found[0]["dropped"]:
            await self.connection.run(queries.DELETE_ORPHANS, writing=True,
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
        self.connection.ensure_open()
        if limit <= 0 or not query.strip():
            return []
        await self.mirror.sync()
        return await shared.search(self.mirror.index, self.mirror.links, self._embedder, query,
                                   group_ids=group_ids, kinds=kinds, limit=limit, as_of=as_of)

    async def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        check_filters(group_ids, kinds)
        where, params = filters(group_ids, kinds)
        if where is None:
            return
        found = await self.connection.run(queries.KEYS_AND_TIMES.format(where=where), **params)
        keys = [row["uuid"] for row in sorted(found, key=lambda r: (time_of(r["at"]), r["uuid"]))]
        for start in range(0, len(keys), FETCH_CHUNK):
            chunk = keys[start : start + FETCH_CHUNK]
            episodes = await self.connection.fetch(chunk)
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
        found = await self.connection.run(queries.COUNT.format(where=where), **params)
        return int(found[0]["n"])

    async def ids_starting(self, prefix: str, *,
                           group_ids: Sequence[str] | None = None) -> list[str]:
        """``backends.protocol.FindsIds``: a range of the search index, every process's
        writes included."""
        check_filters(group_ids, None)
        self.connection.ensure_open()
        await self.mirror.sync()
        return self.mirror.index.ids_starting(prefix, group_ids)

    async def applied(self, epoch: str | None = None) -> Position | None:
        """The position of journal ``epoch`` this graph was last brought up to: many journals
        (homes) feed one server, each with its own position."""
        if epoch is None:
            return None
        found = await self.connection.run(queries.POSITION, key=f"journal:{epoch}")
        return Position(epoch, int(found[0]["seq"])) if found else None

    async def record_applied(self, position: Position) -> None:
        """Recorded only in the instance this process knows: a position recorded in a graph
        emptied meanwhile would spare its journal the replay it needs."""
        found = await self.connection.run(
            queries.PUT_POSITION, writing=True, instance=self.mirror.instance,
            key=f"journal:{position.epoch}", value=str(position.seq))
        if not found:
            await self.mirror.sync()  # raises GraphEmptied
            raise WriteFailed("graph layer: the graph changed while its position was recorded")

    async def retired_facts(self, episodes: Collection[str] | None = None) -> list[KeptFact]:
        """``Kept.retired_facts``"""
        return await self.kept.retired_facts(episodes)

    async def keep_history(self, facts: Sequence[KeptFact]) -> int:
        """``Kept.keep_history``"""
        return await self.kept.keep_history(facts)

    async def enriched(self) -> dict[str, str]:
        """``Kept.enriched``"""
        return await self.kept.enriched()

    async def enrichments(self, keys: Iterable[str]) -> list[Enrichment]:
        """``Kept.enrichments``"""
        return await self.kept.enrichments(keys)

    async def keep_enrichments(self, found: Sequence[Enrichment]) -> int:
        """``Kept.keep_enrichments``"""
        return await self.kept.keep_enrichments(found)

    async def knowledge(
        self, group_ids: Sequence[str]
    ) -> tuple[list[KnownEntity], list[KnownFact]]:
        """``backends.protocol.Knows``, as graphiti reads this graph (graph/knowledge.py)."""
        from backends.graph.knowledge import read_knowledge

        return await read_knowledge(self.connection.driver, group_ids)

    async def build_graphiti_indexes(self) -> None:
        """Make sure graphiti's own indexes exist, for a graphiti user's ``Graphiti.search``
        over this graph (ours needs none); FalkorDB keeps them current as we write."""
        await self.connection.driver.build_indices_and_constraints()

    async def refresh_graphiti_indexes(self) -> None:
        """Nothing to rebuild: FalkorDB's full-text indexes follow every write (Kùzu's do not,
        which is why the embedded layer rebuilds them). Checks they still exist."""
        await self.build_graphiti_indexes()

    async def enrich(self, *, group_ids: Sequence[str] | None = None,
                     progress: Callable[[int, int], None] | None = None) -> Enriched:
        """``Enriches.enrich``: graphiti's LLM extraction (enrich.py), recorded on the
        server, so a memory another process enriched is not enriched again."""
        return await self.enricher.everything(
            [e async for e in self.scan(group_ids=group_ids)], progress)

    @property
    def enricher(self) -> Enricher:
        if self._llm is None:
            raise ProviderFailed(shared.NO_LLM)
        if self._enricher is None:
            from backends.graph.enrich import Enricher
            from backends.graph.falkor.enrich import FalkorPlace

            self._enricher = Enricher(FalkorPlace(self.connection, self.mirror, self.kept),
                                      self._llm)
        return self._enricher

    async def aclose(self) -> None:
        if self._enricher is not None:
            await self._enricher.stop()
        if not self.connection.closed:
            self.mirror.close()
            await self.connection.close()
