"""The knowledge graph as graphiti reads it (``EntityNode``, ``EntityEdge``), on any engine
whose graphiti driver is given: what ``backends.protocol.Knows`` answers. Imports graphiti."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from pydantic.warnings import PydanticDeprecatedSince20

from backends.protocol import KnownEntity, KnownFact

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", category=PydanticDeprecatedSince20)
    from graphiti_core.edges import EntityEdge
    from graphiti_core.errors import GroupsEdgesNotFoundError, GroupsNodesNotFoundError
    from graphiti_core.nodes import EntityNode


async def read_knowledge(
    driver: Any, group_ids: Sequence[str]
) -> tuple[list[KnownEntity], list[KnownFact]]:
    """Every entity and fact of ``group_ids`` that graphiti's own reads find through
    ``driver``, facts named by their ends."""
    groups = list(group_ids)
    try:
        nodes = await EntityNode.get_by_group_ids(driver, groups)
    except GroupsNodesNotFoundError:  # graphiti's way of saying "none"
        nodes = []
    try:
        edges = await EntityEdge.get_by_group_ids(driver, groups)
    except GroupsEdgesNotFoundError:
        edges = []
    entities = [KnownEntity(node.uuid, node.name, _label(node.labels), node.group_id,
                            node.summary) for node in nodes]
    names = {node.uuid: node.name for node in nodes}
    facts = [KnownFact(edge.uuid, edge.name, edge.fact, edge.group_id,
                       names.get(edge.source_node_uuid, edge.source_node_uuid),
                       names.get(edge.target_node_uuid, edge.target_node_uuid),
                       edge.valid_at, edge.invalid_at, edge.expired_at, tuple(edge.episodes))
             for edge in edges]
    return entities, facts


def _label(labels: Sequence[str]) -> str:
    return next((label for label in labels if label != "Entity"), "Entity")
