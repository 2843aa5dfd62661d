"""A server's graph emptied under running processes (restarted without its data, or dropped) is
noticed: each process is told once (``GraphEmptied``) and goes on with the empty graph, and
under ``auto`` the journal is replayed into it, as status says, with the facts rewrites had
retired (the journal's history file)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import falkordb
import pytest
from falkor_server import FalkorServer, address_for

from backends.errors import GraphEmptied
from backends.graph.address import ServerAddress
from backends.graph.falkor.backend import FalkorBackend
from backends.model import Episode
from backends.protocol import Position
from memory.store.dual import DualBackend
from memory.store.selection import open_memory

DEADLINE = 120.0  # a bound on waiting for the background replay under load, not a timing claim


def note(n: int) -> Episode:
    return Episode.create(group_id="team", kind="note", name=f"note {n}", key=str(n),
                          body=f"kept through the restart {n}")


def discovery(files: list[str]) -> Episode:
    return Episode.create(group_id="team", kind="codebase_discovery", name="discovery", key="d",
                          body={"files": files})


def drop(address: ServerAddress) -> None:
    assert address.socket is not None
    client = falkordb.FalkorDB(unix_socket_path=address.socket)
    try:
        client.select_graph(address.graph).delete()
    finally:
        client.connection.close()


async def test_each_process_is_told_once_then_uses_the_empty_graph(tmp_path: Path) -> None:
    address = address_for(tmp_path)
    writer = await FalkorBackend.open(address)
    other = await FalkorBackend.open(address)  # another process's client
    try:
        await writer.upsert_many([note(n) for n in range(3)])
        drop(address)
        with pytest.raises(GraphEmptied, match="emptied"):
            await writer.search("restart")
        assert await writer.search("restart") == []  # told once
        await writer.upsert(note(9))
        with pytest.raises(GraphEmptied):
            await other.upsert(note(8))
        await other.upsert(note(8))
        assert {hit.episode.id for hit in await other.search("restart")} == {
            note(8).id, note(9).id}
        assert await writer.count() == 2
    finally:
        await writer.aclose()
        await other.aclose()


async def test_no_position_is_recorded_into_a_graph_emptied_meanwhile(tmp_path: Path) -> None:
    # Recorded there, it would spare the journal the replay the empty graph needs.
    address = address_for(tmp_path)
    store = await FalkorBackend.open(address)
    try:
        await store.record_applied(Position("journal", 4))
        drop(address)
        with pytest.raises(GraphEmptied):
            await store.record_applied(Position("journal", 5))
        assert await store.applied("journal") is None
        await store.record_applied(Position("journal", 6))
        assert await store.applied("journal") == Position("journal", 6)
    finally:
        await store.aclose()


async def replayed(store: DualBackend) -> str:
    """The status reason once the background catch-up has replayed the journal ('' if never)."""
    started = time.monotonic()
    while time.monotonic() - started < DEADLINE:
        status = await store.status()
        if status.pending == 0 and "emptied" in status.reason and "failed" not in status.reason:
            return status.reason
        await asyncio.sleep(0.1)
    return ""


async def test_auto_replays_the_journal_into_a_server_restarted_empty(tmp_path: Path) -> None:
    socket = tmp_path / "falkor.sock"
    address = ServerAddress("team", socket=str(socket))
    server = await asyncio.to_thread(FalkorServer, socket=socket)
    try:
        async with open_memory(tmp_path / "home", "auto", graph_url=str(address)) as store:
            assert isinstance(store, DualBackend)
            assert not any(r.pending for r in [await store.upsert(note(n)) for n in range(5)])
            await store.upsert(discovery(["src/a.py", "src/b.py"]))
            await store.upsert(discovery(["src/a.py"]))  # retires the fact on b.py
            await store.catch_up()
            retired = await store.retired_facts()
            assert retired is not None and len(retired) == 1
            server.stop()
            server = await asyncio.to_thread(FalkorServer, socket=socket)  # nothing kept

            assert (await store.upsert(note(5))).pending  # the journal has it; the graph not yet
            reason = await replayed(store)
            assert "the journal replayed into it" in reason
            assert not (await store.upsert(note(6))).pending
        graph = await FalkorBackend.open(address)
        try:
            assert {e.id async for e in graph.scan()} == {
                *(note(n).id for n in range(7)), discovery([]).id}
            assert await graph.retired_facts() == retired  # from the journal's history file
        finally:
            await graph.aclose()
    finally:
        server.stop()
