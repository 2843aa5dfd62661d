"""Filling a server is linear: the write queries find the facts an episode held through the
server's edge index, never by scanning every node of the graph once per episode (read from
the server's own plan, ``GRAPH.EXPLAIN``; so do the reads of a few episodes' facts), and a
process does not read its own writes back from the change feed (it knows them); another
process's writes it does read."""

from __future__ import annotations

from collections.abc import AsyncIterator

import falkordb
import pytest
from falkor_server import fresh_graph

from backends.graph import shared
from backends.graph.address import ServerAddress
from backends.graph.falkor import queries
from backends.graph.falkor.backend import FalkorBackend
from backends.graph.stored import encode
from backends.model import Episode, now


def discovery(n: int) -> Episode:
    return Episode.create(group_id="proj", kind="codebase_discovery", name=f"discovery {n}",
                          key=str(n), body={"files": [f"src/m{n}.py"], "patterns": ["p"]})


@pytest.fixture(scope="module")
def address() -> ServerAddress:
    return fresh_graph("bulk_writes")


@pytest.fixture(scope="module")
def graph(address: ServerAddress) -> falkordb.Graph:
    assert address.socket is not None
    return falkordb.FalkorDB(unix_socket_path=address.socket).select_graph(address.graph)


@pytest.fixture
async def store(address: ServerAddress) -> AsyncIterator[FalkorBackend]:
    opened = await FalkorBackend.open(address)
    yield opened
    await opened.aclose()


async def test_a_batch_write_scans_no_node(store: FalkorBackend, graph: falkordb.Graph) -> None:
    await store.upsert_many([discovery(n) for n in range(3)])
    prepared = await shared.prepare(store._embedder, [discovery(n) for n in range(3, 6)])
    query, params = queries.write_batch(
        [(episode, encode(vector), structure, names)
         for episode, vector, structure, names in prepared], now())
    plan = str(graph.explain(query, params))
    assert "All Node Scan" not in plan
    assert "Edge By Index Scan | [old:RELATES_TO]" in plan


def test_a_delete_scans_no_node(graph: falkordb.Graph) -> None:
    plan = str(graph.explain(queries.DELETE, {"uuid": discovery(0).id}))
    assert "All Node Scan" not in plan
    assert "Label Scan" not in plan
    assert "Edge By Index Scan | [r:RELATES_TO]" in plan


async def test_a_writer_does_not_read_its_own_writes_back(
        store: FalkorBackend, graph: falkordb.Graph) -> None:
    written = discovery(10)
    await store.upsert_many([written])
    # Changed behind every process's back (no change stamp): only a read-back would see it.
    graph.query("MATCH (e:Episodic {uuid: $uuid}) SET e.name = 'read back'",
                {"uuid": written.id})
    await store.search("discovery")
    assert store.mirror.index.episode(written.id) == written


async def test_another_writers_changes_are_read(address: ServerAddress,
                                                store: FalkorBackend) -> None:
    other = await FalkorBackend.open(address)
    try:
        await store.upsert(discovery(20))
        await other.upsert(discovery(21))
        await store.upsert(discovery(22))  # its stamp follows the other's: no shortcut
        await other.upsert(discovery(23))
        for reader in (store, other):
            found = {hit.episode.id for hit in await reader.search("discovery", limit=50)}
            assert {discovery(n).id for n in range(20, 24)} <= found
    finally:
        await other.aclose()


@pytest.mark.parametrize(("query", "params"), [
    (queries.FACTS_OF, {"keys": ["a", "b"]}),
    (queries.CURRENT_FACTS, {"uuid": "a"}),
    (queries.RETIRED_OF, {"episodes": ["a"]}),
])
def test_the_facts_of_a_few_episodes_are_found_through_indexes(
    graph: falkordb.Graph, query: str, params: dict[str, object],
) -> None:
    """A sync's link load, an enrichment's read and a move's history read each a few
    episodes' facts: through their entity_edges and the edge index, never every fact."""
    plan = str(graph.explain(query, params))
    assert "Label Scan" not in plan and "All Node Scan" not in plan
    assert "Node By Index Scan | (e:Episodic)" in plan
    assert "Edge By Index Scan | [r:RELATES_TO]" in plan
