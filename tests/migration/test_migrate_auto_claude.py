"""One Auto-Claude spec folder, as it is, becomes memories of the right kinds, tagged with the
spec; twice = once; the importer and the agent API split a session the same way."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from backends.graph import GraphBackend
from backends.insights import Scope
from backends.model import Episode
from memory.agent.memories import AgentMemory, TaskOutcome
from memory.agent.records import parse
from memory.importers import AutoClaudeFolder
from migrate import Ledger, Migrator
from migration.auto_claude_folder import EXPECTED_KINDS, SESSION_1, build

SPEC = "project"  # build() writes <root>/project/memory: the spec is named after its folder


def folder_of(root: Path, *, nested_map: bool) -> AutoClaudeFolder:
    return AutoClaudeFolder(build(root / SPEC, nested_map=nested_map), Scope("proj-1", SPEC))


async def by_kind(graph: GraphBackend, kind: str) -> list[Episode]:
    return [e async for e in graph.scan(kinds=[kind])]


@pytest.mark.parametrize("nested_map", [False, True], ids=["flat-map", "discovered-files-map"])
async def test_import_twice_adds_nothing(
    tmp_path: Path, graph: GraphBackend, ledger: Ledger, nested_map: bool
) -> None:
    folder = folder_of(tmp_path, nested_map=nested_map)
    first = await Migrator(folder, graph, ledger, stream=folder.stream).run()
    assert first.ok and first.written == sum(EXPECTED_KINDS.values())
    assert first.written_by_kind == dict(sorted(EXPECTED_KINDS.items()))
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


async def test_each_item_is_one_memory_of_its_kind_with_its_time(
    tmp_path: Path, graph: GraphBackend, ledger: Ledger
) -> None:
    flat = folder_of(tmp_path / "flat", nested_map=False)
    nested = folder_of(tmp_path / "nested", nested_map=True)
    await Migrator(flat, graph, ledger, stream=flat.stream).run()
    assert all([e.data["spec"] == SPEC and e.group_id == "proj-1" async for e in graph.scan()])

    sessions = await by_kind(graph, "session_insight")
    assert [s.name for s in sessions] == ["Session 1 insights", "Session 2 insights"]
    assert sessions[0].data == SESSION_1 | {"spec": SPEC}
    assert sessions[0].created_at == datetime(2025, 3, 1, 10, tzinfo=UTC)

    files = {e.name: e.data for e in await by_kind(graph, "codebase_discovery")}
    assert files["src/api/auth.py"]["description"] == "JWT validation and refresh"
    assert files["src/api/routes.py"] == {"file": "src/api/routes.py", "description": "route table",
                                          "spec": SPEC}
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
    assert dated.data == {"gotcha": "Migrations must run before the app starts",
                          "context": "alembic upgrade head", "spec": SPEC}
    assert dated.created_at == datetime(2025, 3, 1, 11, tzinfo=UTC)
    assert gotchas["The cache key includes the tenant"].created_at == datetime(
        2025, 3, 2, 12, 15, tzinfo=UTC)

    outcomes = {e.name: parse(e, TaskOutcome) for e in await by_kind(graph, "task_outcome")}
    assert sorted(outcomes) == ["Worked: Running the focused test first", "subtask-1-1 succeeded",
                                "subtask-1-2 succeeded", "subtask-2-1 succeeded"]
    assert all(o is not None and o.success for o in outcomes.values())
    [failed] = await by_kind(graph, "failed_approach")
    assert failed.data["approach"] == "Mocking the clock globally"
    [advice] = await by_kind(graph, "recommendation")
    assert advice.data["recommendation"] == "Start from the failing refresh test"


async def test_an_item_without_known_keys_is_one_memory_whoever_reads_it(
    tmp_path: Path, graph: GraphBackend
) -> None:
    sessions = tmp_path / "memory" / "session_insights"
    sessions.mkdir(parents=True)
    insights = {"discoveries": {"patterns_found": [{"rule": "retry once", "scope": "network"}]}}
    (sessions / "session_001.json").write_bytes(orjson.dumps(insights))
    scope = Scope("proj-1", "042-net")
    imported = {e.id for e in AutoClaudeFolder(tmp_path / "memory", scope).episodes()
                if e.kind == "pattern"}

    reordered = {"discoveries": {"patterns_found": [{"scope": "network", "rule": "retry once"}]}}
    saved = await AgentMemory(graph, "proj-1", "042-net").save_session_insights(1, reordered)
    assert imported and imported == {e.id for e in saved if e.kind == "pattern"}
