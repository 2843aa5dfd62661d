"""graphiti's ``FalkorDriver`` as the graph layer uses it: one server graph holds every group,
and graphiti's writes of an episode keep our properties on it. Importing this module imports
graphiti (``server.connect`` does, lazily).

graphiti maps a ``group_id`` onto a FalkorDB graph of its own (``clone(database=group_id)``);
ours is a property of the nodes in the one graph the address names, so a clone is the driver
itself. graphiti saves an episode with ``SET n = {...}``, which replaces the node's whole
property map: our ``kind``, ``invalid_at``, ``valid_at_set`` and ``embedding_f16`` would go,
and the episode would leave the graph layer (its reads look for ``kind``). The same query with
``SET n += {...}`` sets graphiti's properties and keeps the rest.
"""

from __future__ import annotations

from typing import Any

from graphiti_core.driver.driver import GraphProvider
from graphiti_core.driver.falkordb_driver import FalkorDriver, FalkorDriverSession
from graphiti_core.models.nodes.node_db_queries import (
    get_episode_node_save_bulk_query,
    get_episode_node_save_query,
)


def _keeping(query: str) -> str:
    kept = query.replace("SET n = {", "SET n += {")
    if kept == query:  # graphiti changed the query: better refuse than erase our properties
        raise ImportError("graphiti's FalkorDB episode save is not the one dualmem knows")
    return kept


KEEPING: dict[str, str] = {
    query: _keeping(query) for query in (
        get_episode_node_save_query(GraphProvider.FALKORDB),
        get_episode_node_save_bulk_query(GraphProvider.FALKORDB),
    )
}
"""graphiti's episode saves -> the same, keeping the properties they do not name"""


class OneGraphDriver(FalkorDriver):
    """``FalkorDriver`` on one graph for every group, keeping our episode properties."""

    def clone(self, database: str) -> OneGraphDriver:
        return self

    def session(self, database: str | None = None) -> FalkorDriverSession:
        return _KeepingSession(self._get_graph(database))

    async def execute_query(self, cypher_query_: str, **kwargs: Any) -> Any:
        return await super().execute_query(KEEPING.get(cypher_query_, cypher_query_), **kwargs)


class _KeepingSession(FalkorDriverSession):
    async def run(self, query: str | list[Any], **kwargs: Any) -> Any:
        if isinstance(query, str):
            query = KEEPING.get(query, query)
        return await super().run(query, **kwargs)
