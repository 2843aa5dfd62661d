"""graphiti's own read and search APIs over a graph dualmem wrote: episodes, entities, MENTIONS
and RELATES_TO facts, with superseded decisions marked as such (``invalid_at``)."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from falkor_server import fresh_graph

from backends.errors import BackendUnavailable
from backends.graph import GraphBackend, HashingEmbedder
from backends.graph.address import ServerAddress
from backends.graph.falkor.backend import FalkorBackend
from backends.graph.kuzu import engines
from backends.model import Episode
from memory import Adr, record_adr, supersede_adr

PROJECT = "shop"
DB_FILE = engines.FILES[engines.default]  # the run's engine (tests/conftest.py)


def outcome(task: str, success: bool, files: list[str], feature: str) -> Episode:
    return Episode.create(
        group_id=PROJECT, kind="task_outcome", name=f"{task} {'ok' if success else 'failed'}",
        body={"task_id": task, "success": success, "outcome": "done",
              "metadata": {"feature_id": feature, "files_modified": files}}, key=task)


@pytest.fixture(params=["embedded", "falkordb"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Path | ServerAddress:
    """The graph under test: embedded (the run's engine) or on the run's FalkorDB server, in
    the graph named after the group, where graphiti's FalkorDB model looks for a group
    (``Graphiti.search`` routes each group to the graph of that name)."""
    return tmp_path / "graph" if request.param == "embedded" else fresh_graph(PROJECT)


@pytest.fixture
async def written(where: Path | ServerAddress) -> Path | ServerAddress:
    graph: GraphBackend | FalkorBackend = (
        await GraphBackend.open(where) if isinstance(where, Path)
        else await FalkorBackend.open(where))
    await record_adr(graph, PROJECT, Adr(adr_id="ADR-001", title="Sessions in cookies",
                                         decision="Keep `SessionStore` in signed cookies"))
    await supersede_adr(graph, PROJECT, "ADR-001", Adr(
        adr_id="ADR-002", title="Sessions in Redis", decision="Move `SessionStore` to Redis"))
    await graph.upsert_many([
        outcome("T-1", False, ["src/auth/session.py"], "F-login"),
        Episode.create(group_id=PROJECT, kind="gotcha", name="cookie size",
                       body="`SessionStore` cookies break past 4 KB in src/auth/session.py"),
    ])
    if full_text(where):
        await graph.build_graphiti_indexes()
    await graph.aclose()
    return where


def full_text(where: Path | ServerAddress) -> bool:
    """Whether graphiti's full-text search can run on this graph (a capability of the engine)."""
    return isinstance(where, ServerAddress) or engines.FULL_TEXT[engines.default]


@pytest.fixture
async def driver(written: Path | ServerAddress) -> AsyncIterator[Any]:
    """graphiti's own driver on what dualmem wrote: its Kùzu driver (on LadybugDB through the
    bridge in backends/graph/kuzu/engines.py) or its FalkorDB driver."""
    if isinstance(written, ServerAddress):
        from falkordb.asyncio import FalkorDB
        from graphiti_core.driver.falkordb_driver import FalkorDriver

        server = FalkorDriver(falkor_db=FalkorDB(unix_socket_path=written.socket),
                              database=written.graph)
        yield server
        await server.close()
        return
    from graphiti_core.driver.kuzu_driver import KuzuDriver

    opened = KuzuDriver(db=str(written / DB_FILE))
    yield opened
    opened.client.close()
    gc.collect()
    opened.db.close()


async def test_graphiti_reads_entities_and_facts(driver: Any) -> None:
    from graphiti_core.edges import EntityEdge
    from graphiti_core.nodes import EntityNode

    entities = {n.name: n for n in await EntityNode.get_by_group_ids(driver, [PROJECT])}
    assert {"ADR-001", "ADR-002", "SessionStore", "src/auth/session.py", "T-1",
            "F-login"} <= set(entities)
    assert entities["ADR-002"].labels == ["Entity", "Decision"]
    file = entities["src/auth/session.py"]
    await file.load_name_embedding(driver)  # graphiti's node search compares it
    assert len(file.name_embedding) == HashingEmbedder().dimension
    facts = await EntityEdge.get_by_group_ids(driver, [PROJECT])
    by_name = {(f.name, entities_by_uuid(entities)[f.source_node_uuid],
                entities_by_uuid(entities)[f.target_node_uuid]): f for f in facts}
    supersedes = by_name["SUPERSEDES", "ADR-002", "ADR-001"]
    await supersedes.load_fact_embedding(driver)
    assert supersedes.invalid_at is None and supersedes.fact_embedding
    old = by_name["GOVERNS", "ADR-001", "SessionStore"]
    new = by_name["GOVERNS", "ADR-002", "SessionStore"]
    assert old.invalid_at is not None and new.invalid_at is None
    failed = by_name["FAILED_ON", "T-1", "src/auth/session.py"]
    assert "failed" in failed.fact and failed.invalid_at is None
    assert ("PART_OF", "T-1", "F-login") in by_name


def entities_by_uuid(entities: dict[str, Any]) -> dict[str, str]:
    return {node.uuid: name for name, node in entities.items()}


async def test_retrieve_episodes_marks_the_superseded_decision(driver: Any) -> None:
    from graphiti_core.edges import EntityEdge
    from graphiti_core.utils.maintenance.graph_data_operations import retrieve_episodes

    episodes = await retrieve_episodes(driver, datetime.now(UTC), 10, [PROJECT])
    by_name = {episode.name: episode for episode in episodes}
    old = next(e for name, e in by_name.items() if name.startswith("ADR-001"))
    new = next(e for name, e in by_name.items() if name.startswith("ADR-002"))
    # graphiti episodes have no validity of their own: what they state does. Every fact of the
    # superseded decision is invalid, every fact of its successor in force.
    old_facts = await EntityEdge.get_by_uuids(driver, old.entity_edges)
    new_facts = await EntityEdge.get_by_uuids(driver, new.entity_edges)
    assert old_facts and all(f.invalid_at is not None for f in old_facts)
    assert new_facts and all(f.invalid_at is None for f in new_facts)


async def test_graphiti_search_finds_our_facts(driver: Any, where: Path | ServerAddress) -> None:
    if not full_text(where):
        pytest.skip(f"graphiti's Graphiti.search needs a full-text extension, which "
                    f"{engines.default} does not bundle")
    from graphiti_core.graphiti import Graphiti
    from graphiti_core.search.search_config_recipes import NODE_HYBRID_SEARCH_RRF
    from graphiti_core.search.search_filters import SearchFilters

    from backends.graph.graphiti_clients import GraphitiEmbedder
    from graph.stand_ins import OrderKeepingReranker, ScriptedLLM

    graphiti = Graphiti(graph_driver=driver, embedder=GraphitiEmbedder(HashingEmbedder()),
                        llm_client=ScriptedLLM(), cross_encoder=OrderKeepingReranker())
    facts = await graphiti.search("SessionStore Redis", group_ids=[PROJECT])
    assert any("ADR-002" in f.fact and f.invalid_at is None for f in facts)
    current = await graphiti.search("SessionStore cookies", group_ids=[PROJECT],
                                    search_filter=SearchFilters(invalid_at=None))
    assert current
    nodes = await graphiti.search_("session", config=NODE_HYBRID_SEARCH_RRF,
                                   group_ids=[PROJECT])
    assert "src/auth/session.py" in {node.name for node in nodes.nodes}


async def test_an_engine_without_full_text_says_so(where: Path | ServerAddress) -> None:
    if full_text(where):
        pytest.skip("this engine has a full-text extension")
    assert isinstance(where, Path)
    graph = await GraphBackend.open(where)
    try:
        with pytest.raises(BackendUnavailable, match="no full-text extension"):
            await graph.build_graphiti_indexes()
    finally:
        await graph.aclose()
