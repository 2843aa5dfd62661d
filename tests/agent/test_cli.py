"""The CLI commands of the agent memory (``seed``, ``session``, ``turns``, ``export
--markdown``), run in-process through ``main`` against each layer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest
from every_layer import command_line

from memory.agent.turns import Retention, TurnState, record_turn
from memory.cli import main
from memory.store.project import project_id
from memory.store.selection import open_memory

SESSION = {
    "subtasks_completed": ["parse-config"],
    "discoveries": {
        "files_understood": {"src/config.py": "loads and validates settings"},
        "patterns_found": ["Validate settings once, at startup"],
        "gotchas_encountered": ["Environment variables override the config file"],
    },
    "what_worked": ["Parsing with pydantic"],
    "what_failed": [],
    "recommendations_for_next_session": ["Add the CLI flag"],
}
TURN = {"feature_id": "FEAT-1", "task_id": "TASK-1", "turn": 1, "coach_decision": "revise",
        "coach_feedback": "add a test for an empty file", "progress_summary": "parser written"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "widget"
    folder.mkdir()
    (folder / "README.md").write_text("# Widget\nMakes widgets.\n")
    (folder / "session_004.json").write_bytes(orjson.dumps(SESSION))
    (folder / "turn.json").write_bytes(orjson.dumps(TURN))
    (folder / "overrides.yaml").write_text("roles: {player: {must_do_additions: [Lint first]}}\n")
    return folder


def run(project: Path, layer: str, capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    home = project / ".dualmem"
    code = main([*command_line(layer, home), "--json", *argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return orjson.loads(captured.out)


def test_seed_session_turns_and_markdown_export(
    project: Path, layer: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seeded = run(project, layer, capsys, "seed", "--project-overrides",
                 str(project / "overrides.yaml"))
    assert len(seeded["system"]["created"]) == 12 and seeded["overview"]["created"] == ["overview"]
    assert (project / ".dualmem" / "entity-overrides.yaml").read_text().startswith("roles:")
    again = run(project, layer, capsys, "seed")
    assert again["system"]["created"] == again["system"]["updated"] == []
    assert again["project_id"] == seeded["project_id"]

    saved = run(project, layer, capsys, "session", "save", str(project / "session_004.json"))
    assert saved["session"] == 4
    assert saved["saved"] == {"session_insight": 1, "pattern": 1, "gotcha": 1,
                              "codebase_discovery": 1, "task_outcome": 2, "recommendation": 1}
    history = run(project, layer, capsys, "session", "history")
    assert [s["session_number"] for s in history["sessions"]] == [4]
    run(project, layer, capsys, "session", "save", str(project / "session_004.json"),
        "--spec", "007-flag", "--session", "1")
    history = run(project, layer, capsys, "session", "history", "--spec", "007-flag")
    assert [(s["session_number"], s["spec"]) for s in history["sessions"]] == [(1, "007-flag")]
    assert len(run(project, layer, capsys, "session", "history")["sessions"]) == 2

    recorded = run(project, layer, capsys, "turns", "record", str(project / "turn.json"))
    assert recorded["turn_id"] == "TURN-FEAT-1-TASK-1-T1"
    latest = run(project, layer, capsys, "turns", "latest", "--feature", "FEAT-1")
    assert [t["coach_feedback"] for t in latest["turns"]] == ["add a test for an empty file"]

    out = project / "markdown"
    exported = run(project, layer, capsys, "export", "--markdown", str(out))
    assert "patterns.md" in exported["files"]
    assert "Validate settings once, at startup" in (out / "patterns.md").read_text()
    assert "`src/config.py`: loads and validates settings" in (out / "codebase_map.md").read_text()


@pytest.mark.parametrize(("argv", "code", "fragment"), [
    (["session", "save"], 2, "session save needs FILE.json"),
    (["turns", "list"], 2, "turns list needs --feature F"),
    (["seed", "--project-overrides", "missing.yaml"], 1, "no such overrides file"),
    (["turns", "record", "README.md"], 1, "not a turn state"),
])
def test_bad_command_lines_are_one_line_errors(
    project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, fragment: str
) -> None:
    home = project / ".dualmem"
    assert main(["--home", str(home), "--backend", "file", *argv]) == code
    err = capsys.readouterr().err
    assert err.startswith("dualmem: error: ") and err.count("\n") == 1 and fragment in err


def test_status_says_when_running_features_keep_the_turns_over_the_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "project" / ".dualmem"

    def status() -> dict[str, Any]:
        assert main(["--home", str(home), "--backend", "file", "--json", "status"]) == 0
        return orjson.loads(capsys.readouterr().out)  # type: ignore[no-any-return]

    async def record_running_turns(count: int) -> None:
        async with open_memory(home, "file") as store:
            for n in range(1, count + 1):
                await record_turn(store, project_id(home),
                                  TurnState(feature_id="FEAT-9", task_id="T", turn_number=n))

    assert main(["--home", str(home), "--backend", "file", "init"]) == 0
    capsys.readouterr()
    assert "turn_states" not in status()
    asyncio.run(record_running_turns(Retention().per_feature + 1))  # one over, still running
    assert status()["turn_states"] == {
        "turns": 51, "per_feature": 50, "per_project": 200, "running_turns": 51,
        "running_features_over": {"FEAT-9": 51},
    }
    assert main(["--home", str(home), "--backend", "file", "status"]) == 0
    assert "FEAT-9: 51 turns, running" in capsys.readouterr().out
