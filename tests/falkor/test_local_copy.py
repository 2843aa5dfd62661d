"""A server graph's search index kept on this machine between opens: a reopen reads only what
changed since (not every episode), answers as an index built from the server does, and a copy
that cannot be trusted (another instance of the graph, a process killed while holding it) is
built again."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import falkordb
import pytest
from falkor_server import address_for

from backends.graph.address import ServerAddress
from backends.graph.falkor.backend import FalkorBackend
from backends.graph.falkor.connection import Connection
from backends.model import Episode

QUERIES = ["parser", "cache budget", "retry", "note 3", "rewritten"]
FULL_READ = "e.embedding_f16 AS vector"
"""the query that reads every episode (an index built from the server)"""


def note(n: int, body: str = "") -> Episode:
    return Episode.create(group_id="team", kind="note", name=f"note {n}", key=str(n),
                          body=body or f"note {n} about the parser, retry {n % 3}, cache budget")


@pytest.fixture
def queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every query the FalkorDB layer sends from here on."""
    sent: list[str] = []
    run = Connection.run

    async def spy(self: Connection, query: str, **params: Any) -> list[dict[str, Any]]:
        sent.append(query)
        return await run(self, query, **params)

    monkeypatch.setattr(Connection, "run", spy)
    return sent


async def answers(store: FalkorBackend) -> list[list[str]]:
    return [[hit.episode.id for hit in await store.search(query, limit=20)] for query in QUERIES]


async def from_the_server(address: ServerAddress) -> list[list[str]]:
    store = await FalkorBackend.open(address)
    try:
        return await answers(store)
    finally:
        await store.aclose()


async def kept(tmp_path: Path, count: int) -> tuple[ServerAddress, Path]:
    """A graph of ``count`` notes, written by a store that kept its index in a folder."""
    address, folder = address_for(tmp_path), tmp_path / "index"
    store = await FalkorBackend.open(address, index_folder=folder)
    await store.upsert_many([note(n) for n in range(count)])
    await store.aclose()
    return address, folder


async def test_a_reopen_reads_only_the_changes_made_meanwhile(
    tmp_path: Path, queries: list[str]
) -> None:
    address, folder = await kept(tmp_path, 12)
    other = await FalkorBackend.open(address)  # another process, while this one is closed
    await other.upsert_many([note(20), note(3, "rewritten by another process")])
    await other.delete(note(5).id)
    await other.aclose()

    queries.clear()
    store = await FalkorBackend.open(address, index_folder=folder)
    try:
        assert not any(FULL_READ in query for query in queries)
        assert await answers(store) == await from_the_server(address)
        assert (await store.search("rewritten"))[0].episode.id == note(3).id
        assert note(5).id not in {hit.episode.id for hit in await store.search("parser", limit=50)}
    finally:
        await store.aclose()


async def test_a_second_process_on_the_same_folder_indexes_in_memory(tmp_path: Path) -> None:
    address, folder = address_for(tmp_path), tmp_path / "index"
    first = await FalkorBackend.open(address, index_folder=folder)
    second = await FalkorBackend.open(address, index_folder=folder)
    try:
        await first.upsert(note(1))
        await second.upsert(note(2))
        assert await answers(first) == await answers(second)
    finally:
        await second.aclose()
        await first.aclose()
    store = await FalkorBackend.open(address, index_folder=folder)
    try:
        assert await answers(store) == await from_the_server(address)
    finally:
        await store.aclose()


async def test_a_copy_of_an_emptied_graph_is_not_used(tmp_path: Path, queries: list[str]) -> None:
    address, folder = await kept(tmp_path, 4)
    assert address.socket is not None
    client = falkordb.FalkorDB(unix_socket_path=address.socket)
    client.select_graph(address.graph).delete()
    client.connection.close()
    other = await FalkorBackend.open(address)  # a new instance, its counter from 0 again
    await other.upsert(note(7, "after the drop"))
    await other.aclose()

    queries.clear()
    store = await FalkorBackend.open(address, index_folder=folder)
    try:
        assert any(FULL_READ in query for query in queries)
        assert [hit.episode.id for hit in await store.search("parser drop", limit=20)] == [
            note(7).id]
    finally:
        await store.aclose()


_HOLDER = """
import asyncio, sys, time
from pathlib import Path
from backends.graph.address import ServerAddress
from backends.graph.falkor.backend import FalkorBackend
from backends.graph.falkor.connection import Connection
from backends.model import Episode
async def main():
    store = await FalkorBackend.open(ServerAddress(sys.argv[1], socket=sys.argv[2]),
                                     index_folder=Path(sys.argv[3]))
    await store.upsert(Episode.create(group_id="team", kind="note", name="late", key="late",
                                      body="written by a process about to be killed"))
    print("ready", flush=True)
    time.sleep(600)
asyncio.run(main())
"""


def killed_while_holding(address: ServerAddress, folder: Path) -> None:
    """A process takes the copy, writes, and is killed (``kill -9``) before closing."""
    assert address.socket is not None
    child = subprocess.Popen([sys.executable, "-c", _HOLDER, address.graph, address.socket,
                              str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


async def test_a_copy_left_by_a_killed_process_is_built_again(
    tmp_path: Path, queries: list[str]
) -> None:
    address, folder = await kept(tmp_path, 4)
    await asyncio.to_thread(killed_while_holding, address, folder)

    queries.clear()
    store = await FalkorBackend.open(address, index_folder=folder)
    try:
        assert any(FULL_READ in query for query in queries)
        assert await answers(store) == await from_the_server(address)
        assert [hit.episode.name for hit in await store.search("killed")] == ["late"]
    finally:
        await store.aclose()
