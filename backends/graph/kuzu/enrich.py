"""graphiti's LLM extraction (``enrich.Enricher``) on the embedded graph: the ``Place`` of a
``Core``. graphiti runs on the database this process holds: its queries go to the graph's one
worker thread (``SharedKuzuDriver``), between ours; a second ``kuzu.Database`` on the path would
drop the process's lock. Importing this module imports graphiti."""

from __future__ import annotations

import re
import warnings
from typing import TYPE_CHECKING, Any

from pydantic.warnings import PydanticDeprecatedSince20

from backends.errors import DualmemError, ProviderFailed
from backends.graph import shared
from backends.graph.embedder import AnyEmbedder
from backends.graph.enrich import Enricher, doubles
from backends.graph.history import digest
from backends.graph.index import EpisodeIndex
from backends.graph.kuzu import engines, queries
from backends.graph.kuzu.core import ROW_BYTES
from backends.graph.kuzu.database import Session
from backends.graph.links import GraphLinks
from backends.model import Episode

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", category=PydanticDeprecatedSince20)
    warnings.filterwarnings("ignore", "The Kuzu backend is deprecated", DeprecationWarning)
    from graphiti_core.driver.driver import GraphDriver
    from graphiti_core.driver.kuzu.operations.community_edge_ops import (
        KuzuCommunityEdgeOperations,
    )
    from graphiti_core.driver.kuzu.operations.community_node_ops import (
        KuzuCommunityNodeOperations,
    )
    from graphiti_core.driver.kuzu.operations.entity_edge_ops import KuzuEntityEdgeOperations
    from graphiti_core.driver.kuzu.operations.entity_node_ops import KuzuEntityNodeOperations
    from graphiti_core.driver.kuzu.operations.episode_node_ops import KuzuEpisodeNodeOperations
    from graphiti_core.driver.kuzu.operations.episodic_edge_ops import (
        KuzuEpisodicEdgeOperations,
    )
    from graphiti_core.driver.kuzu.operations.graph_ops import KuzuGraphMaintenanceOperations
    from graphiti_core.driver.kuzu.operations.has_episode_edge_ops import (
        KuzuHasEpisodeEdgeOperations,
    )
    from graphiti_core.driver.kuzu.operations.next_episode_edge_ops import (
        KuzuNextEpisodeEdgeOperations,
    )
    from graphiti_core.driver.kuzu.operations.saga_node_ops import KuzuSagaNodeOperations
    from graphiti_core.driver.kuzu.operations.search_ops import KuzuSearchOperations
    from graphiti_core.driver.kuzu_driver import KuzuDriver, KuzuDriverSession

if TYPE_CHECKING:
    from backends.graph.kuzu.core import Core

_WRITES = ("CREATE", "MERGE", "SET ", "DELETE")
_PARAMETER = re.compile(r"\$([A-Za-z_]\w*)")


class SharedKuzuDriver(KuzuDriver):
    """graphiti's Kùzu driver on the database a ``Core`` holds. Full-text queries find nothing:
    graphiti's full-text indexes are dropped while anything writes (database.py), and enriching
    writes; candidates still come from exact names and vectors."""

    def __init__(self, core: Core) -> None:
        GraphDriver.__init__(self)  # not KuzuDriver's: it opens a second kuzu.Database
        self._core = core
        self._database = ""  # one database: every group lives in it
        self._entity_node_ops = KuzuEntityNodeOperations()
        self._episode_node_ops = KuzuEpisodeNodeOperations()
        self._community_node_ops = KuzuCommunityNodeOperations()
        self._saga_node_ops = KuzuSagaNodeOperations()
        self._entity_edge_ops = KuzuEntityEdgeOperations()
        self._episodic_edge_ops = KuzuEpisodicEdgeOperations()
        self._community_edge_ops = KuzuCommunityEdgeOperations()
        self._has_episode_edge_ops = KuzuHasEpisodeEdgeOperations()
        self._next_episode_edge_ops = KuzuNextEpisodeEdgeOperations()
        self._search_ops = KuzuSearchOperations()
        self._graph_ops = KuzuGraphMaintenanceOperations()

    async def execute_query(
        self, cypher_query_: str, **kwargs: Any
    ) -> tuple[list[dict[str, Any]], None, None]:
        if "QUERY_FTS_INDEX" in cypher_query_:
            return [], None, None
        params = {k: v for k, v in kwargs.items() if v is not None
                  and k not in ("database_", "routing_")}
        if not engines.NULL_WHEN_MISSING[self._core.engine]:
            # What graphiti left out as None, given as None (Kùzu binds it so itself).
            params = dict.fromkeys(_PARAMETER.findall(cypher_query_)) | params

        def work(session: Session) -> list[dict[str, Any]]:
            return session.dicts(cypher_query_, params)

        if any(word in cypher_query_ for word in _WRITES):
            return await self._core.write(work, payload=ROW_BYTES), None, None
        return await self._core.read(work), None, None

    def session(self, _database: str | None = None) -> KuzuDriverSession:
        return KuzuDriverSession(self)

    async def close(self) -> None:
        """The database is the graph layer's to close."""

    def setup_schema(self) -> None:
        """The graph layer made graphiti's schema when it created the database."""


class KuzuPlace:
    """An embedded graph (Kùzu or LadybugDB) held by a ``Core``: graphiti's queries run on its
    worker thread; the record is a node table, which the core reads once."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.driver = SharedKuzuDriver(core)

    @property
    def embedder(self) -> AnyEmbedder:
        return self.core.embedder

    @property
    def index(self) -> EpisodeIndex:
        return self.core.index

    @property
    def links(self) -> GraphLinks:
        return self.core.links

    async def recorded(self) -> dict[str, str]:
        return await self.core.enriched()

    async def enriched_at(self, episode_id: str) -> str | None:
        return (await self.recorded()).get(episode_id)

    async def entity_edges(self, episode_id: str) -> list[str] | None:
        found = await self.core.read(
            lambda session: session.rows(queries.EDGES_OF, uuid=episode_id))
        return list(found[0][0] or []) if found else None

    def failure(self, exc: Exception) -> DualmemError | None:
        """graphiti's queries reach Kùzu through the core, which raises ours."""
        return None

    async def claim(self, episode: Episode) -> bool:
        """The embedded graph has one process, which enriches one episode at a time."""
        return True

    async def release(self, episode: Episode) -> None:
        """Nothing was taken."""

    async def ready(self) -> None:
        async with self.core.write_lock:
            # graphiti's MERGE/SET would leave its full-text indexes short
            await self.core.unindex()

    async def settle(self, episode: Episode, edges: list[str], new: set[str]) -> None:
        def work(session: Session) -> None:
            session.script(queries.ENRICHED_TABLE)
            with session.transaction():
                session.rows(queries.SET_EDGES, uuid=episode.id, edges=edges)
                dropped = doubles(session.rows(queries.MENTION_PAIRS, uuid=episode.id), new)
                if dropped:
                    session.rows(queries.DROP_MENTIONS, uuids=dropped)
                session.rows(queries.RECORD_ENRICHED, uuid=episode.id, digest=digest(episode))

        await self.core.write(work, payload=ROW_BYTES * (1 + len(edges)))
        (await self.core.enriched())[episode.id] = digest(episode)


def enricher_of(core: Core) -> Enricher:
    """graphiti's extraction on ``core``'s graph, one per database in this process;
    ``ProviderFailed`` when no LLM was given."""
    if core.llm is None:
        raise ProviderFailed(shared.NO_LLM)
    if core.enricher is None:
        core.enricher = Enricher(KuzuPlace(core), core.llm)
    return core.enricher
