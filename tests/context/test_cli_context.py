"""``dualmem context``: the command line over ``build_context``, in-process on a real home."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from memory.cli import main


def run(
    home: Path, capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, dict[str, object]]:
    code = main(["--home", str(home), "--backend", "file", *argv, "--json"])
    return code, orjson.loads(capsys.readouterr().out)


def test_context_of_a_player_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    pattern = "Write notes to a temp file, fsync, then rename"
    assert run(home, capsys, "add", "--group", "x", "--kind", "pattern", "--name", "n",
               "--body", "unrelated group")[0] == 0
    turn = tmp_path / "turn.json"
    turn.write_bytes(orjson.dumps({
        "feature_id": "FEAT-1", "task_id": "TASK-1", "turn": 1, "coach_decision": "revise",
        "coach_feedback": "cover the empty-note case", "progress_summary": "store written",
    }))
    assert run(home, capsys, "turns", "record", str(turn))[0] == 0
    session = tmp_path / "session_001.json"
    session.write_bytes(orjson.dumps({"discoveries": {"patterns_found": [pattern]}}))
    assert run(home, capsys, "session", "save", str(session))[0] == 0

    code, doc = run(home, capsys, "context", "--task", "Notes: temp file and fsync", "--complexity",
                    "3", "--phase", "plan")
    assert code == 0 and pattern in str(doc["markdown"]) and "unrelated" not in str(doc)
    # the task may be given as search's query is, without the option
    assert run(home, capsys, "context", "Notes: temp file and fsync", "--complexity", "3",
               "--phase", "plan") == (code, doc)
    code, doc = run(home, capsys, "context", "--task", "Store notes", "--id", "TASK-1",
                    "--feature", "FEAT-1", "--autobuild", "--turn", "2", "--complexity", "5")
    assert code == 0
    assert isinstance(doc["tokens_used"], int) and isinstance(doc["budget"], int)
    assert 0 < doc["tokens_used"] <= doc["budget"]
    markdown = str(doc["markdown"])
    assert "### Role constraints: player" in markdown and "cover the empty-note case" in markdown
    assert doc["analysis"] == {
        "task_type": "implementation", "phase": "implement", "complexity": 5,
        "similar_tasks": 0, "first_of_type": True, "refinement": True, "previous_turns": 1,
        "history": 0, "avg_turns": 3.0, "success_rate": 0.8, "areas": [],
    }


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--task", "x", "--turn", "2"], "--actor and --turn go with --autobuild"),
        (["--task", "x", "--complexity", "11"], "complexity"),
        (["--task", " "], "description"),
        ([" "], "description"),
        ([], "one of the arguments TASK --task is required"),
        (["x", "--task", "y"], "not allowed with"),
        (["--task", "x", "--phase", "deploy"], "invalid choice"),
    ],
)
def test_bad_command_lines_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    code, doc = run(tmp_path / "home", capsys, "context", *argv)
    assert code == 2 and doc["error"]["type"] == "UsageError"  # type: ignore[index]
    assert fragment in doc["error"]["message"]  # type: ignore[index]
