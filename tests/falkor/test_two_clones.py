"""Two clones of one project (sharing the committed project.json and config.json) write the
team's FalkorDB server from every entry point: a running ``dualmem mcp`` each (the MCP SDK's
client), the CLI, the Stop hook and the Python API, while the server is stopped gracefully,
restarted empty, killed with kill -9 and restarted empty again. Afterwards every acknowledged
write is on the server and in both clones' reads, and the second clone's hooks bring the first
clone's memories."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path

import orjson
from falkor_server import FalkorServer
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from plugin.processes import REPO, call, dualmem

from backends.graph.address import ServerAddress
from backends.graph.falkor.backend import FalkorBackend
from backends.model import Episode
from memory.store.project import project_id
from memory.store.selection import open_memory

DEADLINE = 180.0  # a bound on waiting for the background replays under load, not a timing claim


def clone(tmp_path: Path, name: str, url: str, of: Path | None = None) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    if of is None:
        assert dualmem("init", cwd=folder).returncode == 0
        assert dualmem("config", "set", "graph-url", url, cwd=folder).returncode == 0
    else:  # what git brings: the committed files
        (folder / ".dualmem").mkdir()
        for name in ("project.json", "config.json", ".gitignore"):
            shutil.copy(of / ".dualmem" / name, folder / ".dualmem" / name)
        assert dualmem("init", cwd=folder).returncode == 0
    return folder


def mcp_server(folder: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUALMEM_")}
    return StdioServerParameters(command=sys.executable, args=["-m", "memory", "mcp"],
                                 env=env | {"PYTHONPATH": str(REPO)}, cwd=str(folder))


def hook(folder: Path, event: str, **more: str) -> str:
    document = {"session_id": "s", "transcript_path": str(folder / "none.jsonl"),
                "cwd": str(folder), "hook_event_name": event, **more}
    done = dualmem("hook", event, stdin=orjson.dumps(document), cwd=folder)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


async def on_server(address: ServerAddress) -> str:
    graph = await FalkorBackend.open(address)
    try:
        return "\n".join([episode.body async for episode in graph.scan()])
    finally:
        await graph.aclose()


async def missing_on_server(address: ServerAddress, markers: list[str]) -> list[str]:
    started = time.monotonic()
    while True:
        held = await on_server(address)
        missing = [marker for marker in markers if marker not in held]
        if not missing or time.monotonic() - started > DEADLINE:
            return missing
        await asyncio.sleep(0.5)


async def test_two_clones_keep_every_write_through_outages(tmp_path: Path) -> None:
    socket = tmp_path / "falkor.sock"
    address = ServerAddress("team", socket=str(socket))
    first = clone(tmp_path, "first", str(address))
    second = clone(tmp_path, "second", str(address), of=first)
    project = project_id(first / ".dualmem")
    assert project_id(second / ".dualmem") == project
    server = await asyncio.to_thread(FalkorServer, socket=socket)
    acknowledged: list[str] = []

    async def write_everywhere(clients: dict[Path, Client], phase: str) -> None:
        for folder, client in clients.items():
            marker = f"zx{folder.name}mcp{phase}"
            await call(client, "add_memory", kind="gotcha", text=f"mcp gotcha {marker}")
            acknowledged.append(marker)
            marker = f"zx{folder.name}cli{phase}"
            done = dualmem("add", "--kind", "gotcha", "--name", marker, "--body",
                           f"cli gotcha {marker}", cwd=folder)
            assert done.returncode == 0, done.stderr
            acknowledged.append(marker)
            marker = f"zx{folder.name}hook{phase}"
            hook(folder, "stop", last_assistant_message=f"Gotcha: hook gotcha lesson {marker}")
            acknowledged.append(marker)

    async def api_write(folder: Path, phase: str) -> None:
        marker = f"zx{folder.name}api{phase}"
        async with open_memory(folder / ".dualmem") as store:
            await store.upsert(Episode.create(group_id=project, kind="gotcha", key=marker,
                                              name=marker, body=f"api gotcha {marker}"))
        acknowledged.append(marker)

    try:
        async with AsyncExitStack() as stack:
            clients = {folder: await stack.enter_async_context(Client(
                mcp_server(folder), mode="legacy", read_timeout_seconds=180))
                for folder in (first, second)}
            await write_everywhere(clients, "up")
            await api_write(first, "up")

            server.stop()
            await write_everywhere(clients, "stopped")
            await api_write(second, "stopped")

            # Back empty: the writes of the phase after the second empty restart, below, are
            # what writes here would be (one round of them is enough at `make test` size).
            server = await asyncio.to_thread(FalkorServer, socket=socket)

            server.process.send_signal(signal.SIGKILL)
            server.process.wait()
            await write_everywhere(clients, "killed")

            server.stop()
            server = await asyncio.to_thread(FalkorServer, socket=socket)  # empty again
            await write_everywhere(clients, "again")
            await api_write(first, "again")

            assert not await missing_on_server(address, acknowledged)
            for folder, client in clients.items():
                found = await call(client, "search_memories", query="gotcha", limit=100)
                text = " ".join(hit["text"] for hit in found)
                assert [m for m in acknowledged if m not in text] == [], folder.name
        for folder in (first, second):
            listed = dualmem("list", "--kind", "gotcha", "--json", cwd=folder)
            assert listed.returncode == 0 and not listed.stderr, listed.stderr
            text = " ".join(e["body"] for e in orjson.loads(listed.stdout)["episodes"])
            assert [m for m in acknowledged if m not in text] == [], folder.name
        brought = hook(second, "prompt", prompt="the hook gotcha lesson zxfirsthookkilled")
        assert "zxfirsthookkilled" in brought
        started = hook(second, "session-start", source="startup")
        assert "zxfirst" in started
    finally:
        server.stop()
    assert len(acknowledged) == 27
