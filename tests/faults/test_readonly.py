"""A read-only home (a shared checkout, a mounted volume, CI): every read works in every layer,
through the Python API and the CLI; every write fails with a named error that says why; and
nothing in the home changes. See ``confine`` for how this stays honest when run as root."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from file.helpers import tree

from backends.graph import GraphBackend
from backends.model import Episode
from fallback import FileBackend
from faults import confine
from faults.children import REPO, child_env, script
from migrate import Ledger

BOTH = "ep-both"
IN_FILES = [BOTH, "ep-file-1", "ep-file-2"]
IN_GRAPH = [BOTH, "ep-graph-1"]
# auto cannot hold a graph it cannot write: it reads the file layer, its complete journal.
EXPECTED = {"file": IN_FILES, "graph": IN_GRAPH, "auto": IN_FILES}


def memory(episode_id: str) -> Episode:
    kind = "pattern" if episode_id == "ep-file-2" else "note"  # a view to read, too
    return Episode.parse(id=episode_id, group_id="g", kind=kind, name=f"hello {episode_id}",
                         body=f"hello from {episode_id}", created_at=datetime(2025, 1, 1))


async def fill(home: Path) -> None:
    files = await FileBackend.open(home / "files")
    graph = await GraphBackend.open(home / "graph")
    try:
        await files.upsert_many([memory(i) for i in IN_FILES])
        await graph.upsert_many([memory(i) for i in IN_GRAPH])
    finally:
        await graph.aclose()
        await files.aclose()
    ledger = Ledger.open(home / "migration" / "ledger.sqlite3")
    ledger.record("files->graph", [(BOTH, "g", memory(BOTH).content_hash())])
    ledger.close()


@pytest.mark.parametrize("mode", confine.modes())
def test_a_read_only_home_serves_every_read_and_refuses_every_write_by_name(
    tmp_path: Path, mode: str
) -> None:
    home = tmp_path / "home"
    asyncio.run(fill(home))
    before = tree(home)
    done = confine.run_read_only(mode, home, script("readonly_child.py", str(home), BOTH),
                                 cwd=REPO, env=child_env(), timeout=600)
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    assert tree(home) == before
    reason = confine.REASONS[mode]

    assert report["ledger"]["replayed"] == {}
    refused(report["ledger"]["record"], "MigrationError", reason)
    for layer, expected in EXPECTED.items():
        api, cli = report[layer]["api"], report[layer]["cli"]
        assert "open" not in api, api
        assert (api["count"], api["scan"], api["get"]) == (len(expected), expected, BOTH), layer
        assert api["search"] == expected, layer
        refused(api["write"], "WriteFailed", reason)
        for command in ("status", "search", "list", "get"):
            assert cli[command]["code"] == 0, (layer, command, cli[command])
        assert cli["status"]["doc"]["total"] == len(expected), layer
        assert sorted(e["id"] for e in cli["list"]["doc"]["episodes"]) == expected, layer
        assert sorted(h["episode"]["id"] for h in cli["search"]["doc"]["hits"]) == expected
        assert cli["get"]["doc"]["episode"]["id"] == BOTH
        assert cli["add"]["code"] == 1
        refused(cli["add"]["doc"]["error"], "WriteFailed", reason)
    # This graph never recorded a journal position (and cannot be written here to catch up):
    # status says that the whole journal awaits it.
    assert report["auto"]["cli"]["status"]["doc"]["dual"]["pending"] == len(IN_FILES)


def refused(error: Any, kind: str, reason: str) -> None:
    assert isinstance(error, dict), f"expected {kind}, got {error!r}"
    assert error["type"] == kind and reason in error["message"], error
