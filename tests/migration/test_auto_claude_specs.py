"""Every spec of a project, found from any level of its folders, each item Auto-Claude wrote one
memory of its kind, in its spec, found by search; twice = once; the CLI's report, dry run, spec
filter and status line."""

from __future__ import annotations

import shutil
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from backends.errors import MigrationError
from backends.graph import GraphBackend
from backends.insights import Scope
from backends.protocol import MemoryBackend
from memory.agent.memories import AgentMemory
from memory.cli import main
from memory.importers import find_specs, import_specs
from memory.importers.auto_claude import AutoClaudeFolder
from migrate import Ledger
from migration.auto_claude_folder import (
    FIXTURE,
    FIXTURE_ITEMS,
    FIXTURE_KINDS,
    FIXTURE_SPEC,
    TOOL_ITEMS,
    TOOL_SESSIONS,
    TOOL_SPEC,
    build_tool_spec,
)

GROUP = "shop"


def project_with_two_specs(root: Path) -> Path:
    """A project whose .auto-claude/specs/ holds the fixture spec (copied out of the shared,
    read-only fixture) and the second spec, built in the other writers' shapes."""
    specs = root / "shop" / ".auto-claude" / "specs"
    shutil.copytree(FIXTURE / FIXTURE_SPEC, specs / FIXTURE_SPEC)
    build_tool_spec(specs)
    return root / "shop"


async def found_by_search(store: MemoryBackend, spec: str, kind: str, name: str) -> bool:
    hits = await store.search(name, group_ids=[GROUP], kinds=[kind], limit=20)
    return any(hit.episode.name == name and hit.episode.data["spec"] == spec for hit in hits)


async def test_two_specs_every_item_is_a_memory_of_its_kind_in_its_spec(
    tmp_path: Path, graph: GraphBackend, ledger: Ledger
) -> None:
    project = project_with_two_specs(tmp_path)
    progress: list[tuple[int, int]] = []
    report = await import_specs(project, GROUP, graph, ledger,
                                progress=lambda done, total: progress.append((done, total)))
    assert progress[-1] == (report.written, report.written)  # one count over both specs
    assert [spec.spec for spec in report.specs] == [FIXTURE_SPEC, TOOL_SPEC]
    assert (report.status, report.verified) == ("clean", True)
    assert report.written == len(FIXTURE_ITEMS) + len(TOOL_ITEMS)

    for spec, items in ((FIXTURE_SPEC, FIXTURE_ITEMS), (TOOL_SPEC, TOOL_ITEMS)):
        memories = [e async for e in graph.scan(group_ids=[GROUP])
                    if e.data["spec"] == spec]
        assert sorted((e.kind, e.name) for e in memories) == sorted(items)  # one memory each
        for kind, name in items:
            assert await found_by_search(graph, spec, kind, name), (spec, kind, name)
    # The same session and subtask numbers in two specs are two memories, each true to its spec.
    outcomes = {(e.data["spec"], e.name) async for e in graph.scan(kinds=["task_outcome"])}
    assert {(FIXTURE_SPEC, "subtask-2-1 succeeded"), (TOOL_SPEC, "subtask-2-1 failed"),
            (FIXTURE_SPEC, "subtask-1-1 succeeded"), (TOOL_SPEC, "subtask-1-1 succeeded"),
            } <= outcomes
    first_sessions = [e async for e in graph.scan(kinds=["session_insight"])
                      if e.name == "Session 1 insights"]
    assert sorted(e.data["spec"] for e in first_sessions) == [FIXTURE_SPEC, TOOL_SPEC]

    again = await import_specs(project, GROUP, graph, ledger)
    assert (again.written, again.unchanged) == (0, report.written)
    # However the import is pointed at a spec, its ledger stream is the same: nothing to write.
    alone = await import_specs(project / ".auto-claude" / "specs" / TOOL_SPEC, GROUP, graph, ledger)
    assert (alone.written, alone.unchanged) == (0, len(TOOL_ITEMS))
    assert await graph.count() == report.written


async def test_later_mentions_update_a_memory_and_every_item_keeps_its_time(
    tmp_path: Path, graph: GraphBackend, ledger: Ledger
) -> None:
    await import_specs(build_tool_spec(tmp_path / "specs"), GROUP, graph, ledger)
    memories = {(e.kind, e.name): e async for e in graph.scan()}
    # In session 1 at 09:00, then in the map by record_discovery at 10:30.
    service = memories["codebase_discovery", "app/services/refunds.py"]
    assert service.data == {
        "file": "app/services/refunds.py",
        "description": "Refund service; also replays stored webhook events",
        "changes_made": "Added replay_event()", "patterns_used": ["idempotency key"],
        "gotchas": ["replay_event must not post ledger entries twice"],
        "category": "service", "discovered_at": "2026-12-01T10:30:00+00:00", "spec": TOOL_SPEC,
    }
    assert service.created_at == datetime(2026, 12, 1, 9, tzinfo=UTC)
    flat = memories["codebase_discovery", "app/api/webhooks.py"]
    assert flat.created_at == datetime(2026, 12, 1, 8, tzinfo=UTC)  # the map's _metadata
    gotcha = memories["gotcha", TOOL_ITEMS[11][1]]
    assert gotcha.data["context"] == "webhook ordering"
    assert gotcha.created_at == datetime(2026, 12, 1, 9, 40, tzinfo=UTC)  # its section's date
    stripe = memories["gotcha", "Stripe retries a webhook for up to three days"]
    assert stripe.data["solution"] == "return 200 once the event is stored"
    assert stripe.created_at == datetime(2026, 12, 1, 9, tzinfo=UTC)  # the session's timestamp
    # The pattern met in a session and in patterns.md is one memory with the session's fields.
    pattern = memories["pattern", TOOL_ITEMS[10][1]]
    assert pattern.data["applies_to"] == "app/api/webhooks.py"
    assert pattern.created_at == datetime(2026, 12, 1, 9, tzinfo=UTC)
    failed = memories["task_outcome", "Approach failed: Sort events in memory"]
    assert (failed.data["success"], failed.data["outcome"]) == (
        False, "Events arrive across processes")


async def test_saving_a_spec_session_is_importing_it(tmp_path: Path, graph: GraphBackend) -> None:
    memory = build_tool_spec(tmp_path / "specs")
    for other in ("codebase_map.json", "gotchas.md", "patterns.md"):
        (memory / other).unlink()
    imported = AutoClaudeFolder(memory, Scope(GROUP, TOOL_SPEC)).episodes()
    agent = AgentMemory(graph, GROUP, TOOL_SPEC, source="migration")
    for number, session in TOOL_SESSIONS.items():
        await agent.save_session_insights(number, session)
    saved = sorted([e.to_json() async for e in graph.scan()], key=lambda e: e["id"])
    assert saved == sorted((e.to_json() for e in imported), key=lambda e: e["id"])


@pytest.mark.parametrize(
    "level", ["memory", "spec", "specs", ".auto-claude", "project"],
)
def test_the_specs_are_found_from_any_level(tmp_path: Path, level: str) -> None:
    project = project_with_two_specs(tmp_path)
    specs = project / ".auto-claude" / "specs"
    path = {
        "memory": specs / TOOL_SPEC / "memory",
        "spec": specs / TOOL_SPEC,
        "specs": specs,
        ".auto-claude": project / ".auto-claude",
        "project": project,
    }[level]
    found = [(spec.name, spec.memory) for spec in find_specs(path)]
    both = [(name, specs / name / "memory") for name in (FIXTURE_SPEC, TOOL_SPEC)]
    assert found == (both[1:] if level in ("memory", "spec") else both)


def dualmem(capsys: pytest.CaptureFixture[str], home: Path, *argv: str, code: int = 0) -> Any:
    assert main(["--home", str(home), *argv, "--json"]) == code
    return orjson.loads(capsys.readouterr().out)


def test_the_fixture_spec_imports_per_kind_and_status_shows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    fixture = str(FIXTURE / FIXTURE_SPEC)
    preview = dualmem(capsys, home, "migrate", "--from-auto-claude", fixture, "--dry-run")
    assert (preview["dry_run"], preview["status"], preview["written_by_kind"]) == (
        True, "clean", FIXTURE_KINDS)
    [spec] = preview["specs"]
    assert (spec["spec"], spec["written_by_kind"]) == (FIXTURE_SPEC, FIXTURE_KINDS)
    assert not home.exists()  # a dry run writes nothing: no home, no ledger, no project id

    first = dualmem(capsys, home, "migrate", "--from-auto-claude", fixture, "--group", GROUP)
    assert (first["status"], first["ok"], first["written"]) == ("clean", True, 30)
    stored = dualmem(capsys, home, "list", "--group", GROUP)["episodes"]
    assert Counter(e["kind"] for e in stored) == FIXTURE_KINDS
    status = dualmem(capsys, home, "status")["last_auto_claude_import"]
    assert (status["status"], status["written"], status["path"]) == ("clean", 30, fixture)

    again = dualmem(capsys, home, "migrate", "--from-auto-claude", fixture, "--group", GROUP)
    assert (again["written"], again["unchanged"]) == (0, 30)
    assert main(["--home", str(home), "status"]) == 0
    assert "last Auto-Claude import: " in capsys.readouterr().out


def test_a_project_imports_every_spec_or_the_ones_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = str(project_with_two_specs(tmp_path))
    home = tmp_path / "home"
    one = dualmem(capsys, home, "migrate", "--from-auto-claude", project, "--spec", TOOL_SPEC)
    assert [s["spec"] for s in one["specs"]] == [TOOL_SPEC] and one["written"] == len(TOOL_ITEMS)
    both = dualmem(capsys, home, "migrate", "--from-auto-claude", project)
    assert [(s["spec"], s["written"]) for s in both["specs"]] == [
        (FIXTURE_SPEC, len(FIXTURE_ITEMS)), (TOOL_SPEC, 0)]
    error = dualmem(capsys, home, "migrate", "--from-auto-claude", project, "--spec", "009-x",
                    code=1)
    assert "no spec 009-x" in error["error"]["message"]


@pytest.mark.parametrize("layout", ["empty folder", "unrelated files"])
def test_no_spec_found_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str
) -> None:
    folder = tmp_path / "project"
    (folder / "src" / "app").mkdir(parents=True)
    if layout == "unrelated files":
        (folder / "README.md").write_text("# project\n")
        (folder / ".auto-claude" / "specs" / "001-x").mkdir(parents=True)  # a spec, no memory
    assert main(["--home", str(tmp_path / "home"), "migrate", "--from-auto-claude",
                 str(folder)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(
        f"dualmem: error: no Auto-Claude memory found at or below {folder}")
    with pytest.raises(MigrationError, match="not a folder"):
        find_specs(folder / "README.md")
