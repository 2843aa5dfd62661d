"""The tool hook's quick answer (``memory.tool_quick``): a call that names no file, or only
files its session was told of, is answered before the command line, the event loop and the
store are imported, and every payload gets the answer the whole way gives it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from memory.capture.quick import nothing_new
from plugin.processes import dualmem

HEAVY = ("memory.cli", "fallback.store", "asyncio")
"""what the whole way imports, and the quick answer must not"""
ENTRY = "runpy.run_module('memory', run_name='__main__')"
DEEP = b'{"tool_input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
WHOLE_WAY = "sys.exit(__import__('memory.cli', fromlist=['main']).main())"


def run(project: Path, given: bytes, way: str = ENTRY) -> tuple[str, list[str]]:
    """``dualmem hook post-tool-use`` fed ``given``, through the entry point or the whole way,
    in a process of its own: what it printed, and which of ``HEAVY`` it imported."""
    probe = (f"import runpy, sys\nsys.argv = ['dualmem', 'hook', 'post-tool-use']\n"
             f"try:\n    {way}\nexcept SystemExit:\n    pass\n"
             f"print(sorted(set(sys.modules) & set({HEAVY!r})), file=sys.stderr)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUALMEM_")}
    done = subprocess.run([sys.executable, "-c", probe], input=given, capture_output=True,
                          cwd=project, env=env, timeout=120, check=True)
    return done.stdout.decode(), eval(done.stderr.decode().strip().splitlines()[-1])


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("quick") / "notes-app"
    folder.mkdir()
    assert dualmem("--backend", "file", "init", cwd=folder).returncode == 0
    text = "app/storage.py: rename() is not atomic across file systems"
    done = dualmem("--backend", "file", "add", "--kind", "gotcha", "--name", text[:40],
                   "--body", text, cwd=folder)
    assert done.returncode == 0, done.stderr
    return folder


def call(project: Path, session: str, tool: str, tool_input: object, **extra: object) -> bytes:
    return orjson.dumps({
        "session_id": session, "transcript_path": str(project / "t.jsonl"),
        "cwd": str(project), "hook_event_name": "PostToolUse", "tool_name": tool,
        "tool_input": tool_input, "tool_response": {"success": True},
        "tool_use_id": "toolu_01ABC", **extra})


def test_no_file_and_a_file_told_before_are_answered_without_the_command_line(
        project: Path) -> None:
    storage = {"file_path": str(project / "app" / "storage.py")}
    assert run(project, call(project, "quick", "Bash", {"command": "ls -la"})) == ("{}\n", [])
    assert run(project, call(project, "quick", "Glob", {"pattern": "**/*.py"})) == ("{}\n", [])
    told, imported = run(project, call(project, "quick", "Read", storage))
    assert "rename() is not atomic" in told and "memory.cli" in imported  # the whole way
    assert run(project, call(project, "quick", "Edit", storage)) == ("{}\n", [])
    assert run(project, call(project, "quick", "Bash", {"command": "cat app/storage.py"})) == (
        "{}\n", [])


@pytest.mark.parametrize("name", ["no file", "told before", "fresh file", "outside", "not JSON",
                                  "not an object", "huge", "deep", "wrong types",
                                  "wrong input types"])
def test_every_payload_gets_the_whole_ways_answer(project: Path, name: str) -> None:
    storage = {"file_path": str(project / "app" / "storage.py")}

    def given(session: str) -> bytes:
        return {
            "no file": call(project, session, "Bash", {"command": "git status"}),
            "told before": call(project, session, "Read", storage),
            "fresh file": call(project, session, "Read", storage),
            "outside": call(project, session, "Read", {"file_path": "/etc/hostname"}),
            "not JSON": b"{'tool_name': 'Read'",
            "not an object": b'["Read"]',
            "huge": call(project, session, "Bash", {"command": "echo " + "x" * (4 << 20)}),
            "deep": DEEP,
            "wrong types": call(project, session, "Read", storage, cwd=7, session_id=["s"]),
            "wrong input types": call(project, session, "Read", {"file_path": 7}),
        }[name]

    answers = []
    for way, session in ((ENTRY, f"{name} quick"), (WHOLE_WAY, f"{name} whole")):
        if name == "told before":
            run(project, given(session), way)
        answers.append(run(project, given(session), way)[0])
    assert answers[0] == answers[1]
    assert answers[0].startswith('{"hookSpecificOutput"') == (name == "fresh file")


def test_a_stop_too_deep_to_parse_goes_the_whole_way(project: Path) -> None:
    # (the quick answers once let json's RecursionError out: a traceback, and no answer)
    home = str(project / ".dualmem")
    assert not nothing_new(["hook", "stop"], lambda: DEEP, {"DUALMEM_HOME": home})
