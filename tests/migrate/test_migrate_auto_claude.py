"""An Auto-Claude memory folder, as it is, becomes episodes of the right kinds; twice = once."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from auto_claude_folder import EXPECTED_KINDS, SESSION_1, build

from backends.graph import GraphBackend
from backends.model import Episode
from memory.agent import AgentMemory
from migrate import AutoClaudeFolder, Ledger, Migrator


async def by_kind(graph: GraphBackend, kind: str) -> list[Episode]:
    return [e async for e in graph.scan(kinds=[kind])]


@pytest.mark.parametrize("nested_map", [False, True], ids=["flat-map", "discovered-files-map"])
async def test_import_twice_adds_nothing(
    tmp_path: Path, graph: GraphBackend, ledger: Ledger, nested_map: bool
) -> None:
    folder = AutoClaudeFolder(build(tmp_path / "project", nested_map=nested_map), "proj-1")
    first = await Migrator(folder, graph, ledger, stream=folder.stream).run()
    assert first.ok and first.written == sum(EXPECTED_KINDS.values())
    stored = Counter([e.kind async for e in graph.scan(group_ids=["proj-1"])])
    assert stored == EXPECTED_KINDS

    again = await Migrator(folder, graph, ledger, stream=folder.stream).run()
    assert (again.written, again.unchanged) == (0, first.written)
    # Without the ledger the ids alone prevent duplicates.
    fresh = Ledger.open(tmp_path / "other-ledger.sqlite3")
    try:
        await Migrator(folder, graph, fresh, stream=folder.stream).run()
    finally:
        fresh.close()
    assert await graph.count() == first.written


async def test_each_insight_pattern_gotcha_and_file_is_one_episode(
    tmp_path: Path, graph: GraphBackend, ledger: Ledger
) -> None:
    flat = AutoClaudeFolder(build(tmp_path / "flat", nested_map=False), "proj-1")
    nested = AutoClaudeFolder(build(tmp_path / "nested", nested_map=True), "proj-1")
    await Migrator(flat, graph, ledger, stream=flat.stream).run()

    sessions = await by_kind(graph, "session_insight")
    assert [s.name for s in sessions] == ["Session 1 insights", "Session 2 insights"]
    assert sessions[0].data == SESSION_1
    assert sessions[0].created_at == datetime(2025, 3, 1, 10, tzinfo=UTC)

    files = {e.name: e.data for e in await by_kind(graph, "codebase_discovery")}
    assert files["src/api/auth.py"]["description"] == "JWT validation and refresh"
    assert files["src/api/routes.py"] == {"file": "src/api/routes.py", "purpose": "route table"}
    # Both shapes of codebase_map.json name the same files, under the same ids.
    assert {e.id for e in flat.episodes() if e.kind == "codebase_discovery"} == {
        e.id for e in nested.episodes() if e.kind == "codebase_discovery"
    }

    patterns = sorted(e.name for e in await by_kind(graph, "pattern"))
    assert patterns == [
        "Config is read once at startup",
        "Errors are translated at the edge, never inside services",
        "Routes are registered in one table",
        "Services take a repository in the constructor",  # in a session and in patterns.md
    ]
    gotchas = {e.name: e for e in await by_kind(graph, "gotcha")}
    dated = gotchas["Migrations must run before the app starts"]
    assert dated.body.endswith("_Context: alembic upgrade head_")
    assert dated.created_at == datetime(2025, 3, 1, 11, tzinfo=UTC)
    outcomes = sorted(orjson.dumps(e.data["subtask"]) for e in await by_kind(graph, "task_outcome"))
    assert len(outcomes) == 3


async def test_an_item_without_known_keys_is_one_memory_whoever_reads_it(
    tmp_path: Path, graph: GraphBackend
) -> None:
    sessions = tmp_path / "memory" / "session_insights"
    sessions.mkdir(parents=True)
    insights = {"discoveries": {"patterns_found": [{"rule": "retry once", "scope": "network"}]}}
    (sessions / "session_001.json").write_bytes(orjson.dumps(insights))
    imported = {e.id for e in AutoClaudeFolder(tmp_path / "memory", "proj-1").episodes()
                if e.kind == "pattern"}

    reordered = {"discoveries": {"patterns_found": [{"scope": "network", "rule": "retry once"}]}}
    saved = await AgentMemory(graph, "proj-1").save_session_insights(1, reordered)
    assert imported and imported == {e.id for e in saved if e.kind == "pattern"}
