"""The ``Graph`` protocol's members beyond the memory protocol (backends/graph/protocol.py), held
to one contract on every graph engine: embedded Kùzu (LadybugDB on the Makefile's second pass,
``DUALMEM_TEST_GRAPH_ENGINE``) and a real FalkorDB server (tests/falkor_server.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import pytest
from every_layer import FACTORIES

from backends.errors import BackendUnavailable
from backends.graph.history import Enrichment, KeptFact, digest
from backends.graph.protocol import Graph
from backends.model import Episode
from backends.protocol import Position
from backends.search.entities import Entity, entity_uuid, fact_uuid
from contract.conftest import Handle

GRAPHS = sorted(name for name in ("graph", "falkor") if name in FACTORIES)
"""the layers that are a ``Graph`` alone, over this run's engines (every_layer.py)"""
T0 = datetime(2024, 5, 1, 8, 0, tzinfo=UTC)
GROUP = "proj"


@pytest.fixture(params=GRAPHS)
async def handle(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Handle]:
    opened = Handle(FACTORIES[request.param], tmp_path / "memory")
    yield opened
    await opened.close()


@pytest.fixture
async def graph(handle: Handle) -> Graph:
    return cast(Graph, await handle.open())


@pytest.fixture
async def another(handle: Handle, tmp_path: Path) -> AsyncIterator[Graph]:
    """A second graph of the same engine: where a move writes."""
    other = Handle(handle.factory, tmp_path / "another")
    yield cast(Graph, await other.open())
    await other.close()


def discovery(files: list[str]) -> Episode:
    return Episode.create(group_id=GROUP, kind="codebase_discovery", name="discovery",
                          key="d", body={"files": files}, created_at=T0)


def note(body: str) -> Episode:
    return Episode.create(group_id=GROUP, kind="note", name="billing note", key="n", body=body,
                          created_at=T0)


def enrichment_of(episode: Episode) -> Enrichment:
    """What graphiti's extraction could have found in ``episode``: an entity, and a fact."""
    billing = Entity(entity_uuid(GROUP, "Component", "billing"), "Component", "billing",
                     "the billing service")
    invoices = Entity(entity_uuid(GROUP, "Component", "invoices"), "Component", "invoices")
    fact = KeptFact(uuid=fact_uuid(episode.id, billing.uuid, "WRITES", invoices.uuid),
                    episode=episode.id, group_id=GROUP, name="WRITES",
                    fact="billing writes invoices", created_at=T0, valid_at=T0,
                    invalid_at=None, expired_at=None, source=billing, target=invoices)
    return Enrichment(episode=episode.id, group_id=GROUP, digest=digest(episode),
                      mentions=(billing,), facts=(fact,))


async def test_a_recorded_position_is_read_back_after_a_reopen(
    graph: Graph, handle: Handle
) -> None:
    assert await graph.applied("epoch-1") is None
    await graph.record_applied(Position("epoch-1", 7))
    await graph.record_applied(Position("epoch-1", 9))
    assert await graph.applied("epoch-1") == Position("epoch-1", 9)
    reopened = cast(Graph, await handle.open())
    assert await reopened.applied("epoch-1") == Position("epoch-1", 9)
    await reopened.record_applied(Position("epoch-2", 3))
    if reopened.shared:  # many journals feed it: a position each, and none is the graph's
        assert await reopened.applied("epoch-1") == Position("epoch-1", 9)
        assert await reopened.applied() is None
    else:  # one journal feeds it: the position it was last brought up to
        assert await reopened.applied() == Position("epoch-2", 3)
    assert await reopened.applied("epoch-2") == Position("epoch-2", 3)


async def test_a_rewrites_retired_fact_moves_to_another_graph_once(
    graph: Graph, another: Graph
) -> None:
    await graph.upsert(discovery(["src/a.py", "src/b.py"]))
    latest = discovery(["src/a.py", "src/c.py"])
    await graph.upsert(latest)
    retired = await graph.retired_facts()
    assert len(retired) == 1 and retired[0].episode == latest.id
    assert "src/b.py" in (retired[0].source.name, retired[0].target.name)
    assert retired[0].expired_at is not None
    assert await graph.retired_facts([latest.id]) == retired
    assert await graph.retired_facts(["no-such-memory"]) == []

    assert await another.keep_history(retired) == 0  # its memory is not there yet
    await another.upsert(latest)
    assert await another.retired_facts() == []
    assert await another.keep_history(retired) == 1
    assert await another.keep_history(retired) == 0
    assert await another.retired_facts() == retired


async def test_an_enrichment_is_kept_for_the_content_it_was_made_from(
    graph: Graph, another: Graph
) -> None:
    held = note("The billing service writes the invoices every night.")
    await graph.upsert(held)
    assert await graph.enriched() == {}
    assert await graph.enrichments([held.id]) == []
    found = enrichment_of(held)

    assert await graph.keep_enrichments([found]) == 1
    assert await graph.enriched() == {held.id: digest(held)}
    [kept] = await graph.enrichments([held.id])
    assert (kept.episode, kept.digest) == (held.id, digest(held))
    assert {entity.uuid for entity in kept.mentions} >= {found.mentions[0].uuid}
    assert {fact.uuid for fact in kept.facts} == {found.facts[0].uuid}

    # Another graph that holds the memory at other content takes none of it.
    await another.upsert(note("rewritten since"))
    assert await another.keep_enrichments([found]) == 0
    assert await another.enriched() == {}


async def test_graphitis_indexes_are_built_and_kept_or_refused_by_name(graph: Graph) -> None:
    await graph.upsert(note("an indexed memory"))
    try:
        await graph.build_graphiti_indexes()
    except BackendUnavailable as exc:  # an engine without a full-text extension
        assert exc.reason == "no full-text extension"
    else:
        await graph.build_graphiti_indexes()  # again: nothing to do
    await graph.upsert(note("rewritten after the build"))
    await graph.refresh_graphiti_indexes()
    hits = await graph.search("rewritten", limit=5)
    assert [hit.episode.name for hit in hits] == ["billing note"]
