"""A running ``dualmem mcp`` (``auto``, its graph on a FalkorDB server) through an outage of the
server: stopped, restarted empty. Every tool call is answered meanwhile (from the journal),
every acknowledged write lands in the journal first, and once the server answers again the same
process, never restarted, replays them all into it and reads them from it. (The server killed
with kill -9 under running MCP servers, and restarted empty again: ``test_two_clones.py``.)"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

from falkor_server import FalkorServer
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from plugin.processes import REPO, call, dualmem

from backends.graph.address import ServerAddress
from backends.graph.falkor.backend import FalkorBackend

DEADLINE = 120.0  # a bound on waiting for the background replay under load, not a timing claim


def mcp_server(home: Path, url: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUALMEM_")}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "memory", "--home", str(home), "mcp"],
        env=env | {"PYTHONPATH": str(REPO), "DUALMEM_GRAPH_URL": url}, cwd=str(home.parent))


async def on_server(address: ServerAddress) -> set[str]:
    graph = await FalkorBackend.open(address)
    try:
        return {episode.name async for episode in graph.scan()}
    finally:
        await graph.aclose()


async def eventually_on_server(address: ServerAddress, names: set[str]) -> set[str]:
    """What of ``names`` the server lacks once the replay had its time (empty: none)."""
    started = time.monotonic()
    while True:
        missing = names - await on_server(address)
        if not missing or time.monotonic() - started > DEADLINE:
            return missing
        await asyncio.sleep(0.2)


async def test_mcp_keeps_every_write_through_a_stop_and_an_empty_restart(tmp_path: Path) -> None:
    socket = tmp_path / "falkor.sock"
    address = ServerAddress("team", socket=str(socket))
    home = tmp_path / "project" / ".dualmem"
    home.parent.mkdir()
    assert dualmem("--home", str(home), "init").returncode == 0
    server = await asyncio.to_thread(FalkorServer, socket=socket)
    acknowledged: list[str] = []

    async def write(client: Client, label: str) -> None:
        text = f"gotcha written {label}"
        saved = await call(client, "add_memory", kind="gotcha", text=text)
        assert saved["name"]
        acknowledged.append(saved["name"])
        found = await call(client, "search_memories", query=f"written {label}")
        assert saved["id"] in {hit["id"] for hit in found}

    try:
        async with AsyncExitStack() as stack:
            client = await stack.enter_async_context(Client(
                mcp_server(home, str(address)), mode="legacy", read_timeout_seconds=120))
            await write(client, "while up")

            server.stop()  # gracefully (SIGTERM)
            for n in range(3):
                await write(client, f"while stopped {n}")
            await call(client, "get_task_context", task="gotcha written while stopped")

            server = await asyncio.to_thread(FalkorServer, socket=socket)  # back, empty
            await write(client, "after the restart")
            assert not await eventually_on_server(address, set(acknowledged))
            found = await call(client, "search_memories", query="gotcha written", limit=50)
            assert {hit["name"] for hit in found} == set(acknowledged)
    finally:
        server.stop()
    assert len(acknowledged) == 5
