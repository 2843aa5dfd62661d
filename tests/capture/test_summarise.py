"""With an LLM configured, a captured session is also summarised by the LLM in the same shape,
on ``dualmem enrich`` and in the background after a SessionEnd; never again for the same
derived facts, and a failing endpoint costs nothing. The LLM is the scripted OpenAI-compatible
stand-in of the graph tests, driven through graphiti's real client."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from graph.scripted_chat import ScriptedChat

from capture.shapes import working_session
from memory.cli import main

SUMMARY = {
    "what_was_done": "Made the CSV importer keep quoted commas by reading rows with csv.reader.",
    "files_understood": [{"path": "src/notes/importer.py", "purpose": "reads CSV into notes"}],
    "what_worked": ["csv.reader with the default quotechar"],
    "what_failed": ["splitting rows on commas by hand"],
    "recommendations_for_next_session": ["give the exporter the same treatment"],
}


@pytest.fixture
def chat() -> Iterator[ScriptedChat]:
    served = ScriptedChat({"SessionSummary": SUMMARY})
    yield served
    served.close()


def insight(home: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main([*home, "--json", "list", "--kind", "session_insight"]) == 0
    [episode] = orjson.loads(capsys.readouterr().out)["episodes"]
    return orjson.loads(episode["body"])  # type: ignore[no-any-return]


def test_enrich_summarises_each_captured_session_once(tmp_path: Path, chat: ScriptedChat,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "notes-app"
    home = ["--home", str(project / ".dualmem")]
    assert main([*home, "init"]) == 0
    path = working_session(str(project)).save(tmp_path / "s.jsonl")
    assert main([*home, "capture", str(path)]) == 0
    llm = ["--llm", f"m@{chat.url}"]
    chat.failing = True
    capsys.readouterr()
    assert main([*home, *llm, "enrich"]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    assert "llm" not in insight(home, capsys)
    chat.failing = False
    assert main([*home, *llm, "--json", "enrich"]) == 0
    assert orjson.loads(capsys.readouterr().out)["sessions"] == 1
    summary = insight(home, capsys)["llm"]
    assert {k: v for k, v in summary.items() if k != "basis"} == SUMMARY
    asked = chat.asked.count("SessionSummary")
    assert main([*home, *llm, "--json", "enrich"]) == 0
    assert orjson.loads(capsys.readouterr().out)["sessions"] == 0
    assert chat.asked.count("SessionSummary") == asked
    # Captured again, unchanged: the summary stays, and is not asked for again.
    assert main([*home, "capture", str(path)]) == 0
    capsys.readouterr()
    assert insight(home, capsys)["llm"] == summary


def test_a_session_end_summarises_in_the_background(tmp_path: Path, chat: ScriptedChat,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "notes-app"
    home = ["--home", str(project / ".dualmem")]
    assert main([*home, "init"]) == 0
    capsys.readouterr()
    path = working_session(str(project)).save(tmp_path / "s.jsonl")
    document = {"session_id": "x", "transcript_path": str(path), "cwd": str(project),
                "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUALMEM_")}
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "memory", "hook", "session-end"],
                          input=orjson.dumps(document), capture_output=True, cwd=project,
                          env=env | {"DUALMEM_LLM": f"m@{chat.url}", "PYTHONPATH": str(repo)},
                          timeout=120, check=False)
    assert done.returncode == 0 and b"session insight" in done.stdout  # it did not wait
    deadline = time.monotonic() + 120
    while "llm" not in insight(home, capsys):
        assert time.monotonic() < deadline, "no summary in the background"
        time.sleep(0.5)
    assert insight(home, capsys)["llm"]["what_was_done"] == SUMMARY["what_was_done"]
