"""What server mode says: a failed query is our one line, without graphiti's Cypher and
parameters (unless ``--verbose``); a pending write is replayed into the server, not indexed by a
holder; ``status`` says whether the server answers, what waits for it, the team's counts; and
a password is never printed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest
from falkor_server import FalkorServer, address_for
from plugin.processes import dualmem

from backends.errors import ServerUnreachable
from backends.graph.address import ServerAddress
from backends.graph.falkor.backend import FalkorBackend
from backends.model import Episode


async def test_a_failed_query_prints_no_cypher(tmp_path: Path,
                                               capfd: pytest.CaptureFixture[str]) -> None:
    socket = tmp_path / "falkor.sock"
    server = await asyncio.to_thread(FalkorServer, socket=socket)
    graph = await FalkorBackend.open(ServerAddress("quiet", socket=str(socket)))
    try:
        server.stop()
        with pytest.raises(ServerUnreachable):
            await graph.upsert(Episode.create(group_id="g", kind="note", name="secret body",
                                              body="the text of a memory"))
    finally:
        await graph.aclose()
        server.stop()
    err = capfd.readouterr().err
    assert "MATCH" not in err and "the text of a memory" not in err


def test_status_and_writes_in_server_mode(tmp_path: Path) -> None:
    home = tmp_path / ".dualmem"
    assert dualmem("--home", str(home), "init").returncode == 0
    url = str(address_for(tmp_path))
    added = dualmem("--home", str(home), "--graph-url", url, "add", "--kind", "gotcha",
                    "--name", "on the server", "--body", "written while it answered")
    assert added.returncode == 0 and b"pending" not in added.stdout
    status = orjson.loads(dualmem("--home", str(home), "--graph-url", url, "status",
                                  "--json").stdout)
    assert status["dual"]["reachable"] and status["dual"]["pending"] == 0
    assert sum(status["groups"].values()) == 1

    away = "redis+unix:///nonexistent/falkor.sock?graph=team&password=hunter2"
    added = dualmem("--home", str(home), "--graph-url", away, "add", "--kind", "gotcha",
                    "--name", "waits", "--body", "written while nobody answered")
    said = (added.stdout + added.stderr).decode()
    assert added.returncode == 0 and "replayed into the graph server" in said
    assert "holder" not in said and "hunter2" not in said
    shown = dualmem("--home", str(home), "--graph-url", away, "status")
    text = (shown.stdout + shown.stderr).decode()
    assert "not reachable" in text and "hunter2" not in text
    # Another server's graph: what this home holds is all pending there.
    assert "this home's changes not yet on the server: 2" in text
