"""A server that does not answer: a named error alone, and under ``auto`` every write lands in
the journal (pending, as status says), replayed into the graph once the server answers."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from falkor_server import FalkorServer, address_for

from backends.errors import ServerUnreachable
from backends.graph.address import ServerAddress
from backends.graph.falkor.backend import FalkorBackend
from backends.model import Episode
from memory.cli import main
from memory.store.dual import DualBackend
from memory.store.selection import open_memory

DEADLINE = 120.0  # a bound on waiting for the retry under load, not a timing claim


async def replayed(store: DualBackend) -> bool:
    """Whether the store's background retry brought the journal into the graph in time."""
    started = time.monotonic()
    while time.monotonic() - started < DEADLINE:
        if (await store.status()).pending == 0:
            return True
        await asyncio.sleep(0.1)
    return False


def note(n: int) -> Episode:
    return Episode.create(group_id="team", kind="note", name=f"note {n}", key=str(n),
                          body=f"written while the server was away {n}")


async def test_nobody_answering_is_named() -> None:
    with pytest.raises(ServerUnreachable, match="unreachable"):
        await FalkorBackend.open(ServerAddress("g", socket="/nonexistent/falkor.sock"))


def test_the_command_line_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--home", str(tmp_path), "--backend", "graph", "--graph-url",
                 "redis+unix:///nonexistent/falkor.sock?graph=g", "add", "--group", "g",
                 "--kind", "note", "--name", "n", "--body", "b"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1
    assert err.startswith("dualmem: error: graph layer unavailable: unreachable "
                          "(redis+unix:///nonexistent/falkor.sock?graph=g: ")


async def test_auto_keeps_writing_and_replays_when_the_server_returns(tmp_path: Path) -> None:
    socket = tmp_path / "falkor.sock"
    address = ServerAddress("team", socket=str(socket))
    async with open_memory(tmp_path / "home", "auto", graph_url=str(address)) as store:
        assert isinstance(store, DualBackend)
        receipts = [await store.upsert(note(n)) for n in range(5)]
        assert all(r.pending and r.layer == "file" for r in receipts)
        status = await store.status()
        assert status.pending == 5 and "unreachable" in status.reason
        assert (await store.search("server away 3"))[0].episode.id == note(3).id

        server = await asyncio.to_thread(FalkorServer, socket=socket)
        try:
            assert await replayed(store)
            assert not (await store.upsert(note(5))).pending
            graph = await FalkorBackend.open(address)
            try:
                assert {e.id async for e in graph.scan()} == {note(n).id for n in range(6)}
            finally:
                await graph.aclose()
        finally:
            await store.aclose()
            server.stop()


async def test_a_refused_password_is_named_as_refused(tmp_path: Path) -> None:
    # The run's server has no password: it refuses one (redis names it by type, not text).
    address = address_for(tmp_path)._replace(password="hunter2")
    with pytest.raises(ServerUnreachable) as raised:
        await FalkorBackend.open(address)
    assert raised.value.detail.startswith(f"{address}: refused: ")
    assert "hunter2" not in str(raised.value)
