"""The tool hook's quick answer (``memory.tool_quick``): a call that names no file, only files
its session was told of, or a file the journal's index answers for, is answered before the
command line, the event loop, the store and the model are imported, and every payload gets the
answer the whole way gives it. An index that does not agree with the files (a memory written
into the journal behind it, a bullet typed into a view) sends the call the whole way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from backends.model import Episode
from bench.migrate import lay_down
from memory.capture.quick import nothing_new
from plugin.processes import dualmem

HEAVY = ("memory.cli", "fallback.store", "asyncio", "backends.model", "orjson", "rapidfuzz",
         "hashlib", "threading", "fallback.disk")
"""what the whole way imports, and the quick answer must not (OpenSSL's hashlib, threading
and the file layer's writes: a tenth of its instructions)"""
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
    for kind, text in NAMING:
        done = dualmem("--backend", "file", "add", "--kind", kind, "--name", text[:40],
                       "--body", text, cwd=folder)
        assert done.returncode == 0, done.stderr
    # A folder recorded within moments of its last change is checked again by the next open
    # (``fallback.file_record``), which a read makes: from then on the index answers.
    assert dualmem("--backend", "file", "search", "storage", cwd=folder).returncode == 0
    return folder


NAMING = [
    ("gotcha", "app/storage.py: rename() is not atomic across file systems"),
    ("pattern", "app/storage.py writes through a temp file beside the target"),
    ("gotcha", '{"gotcha": "app/storage.py once fsynced twice", "status": "superseded"}'),
    ("codebase_discovery", '{"file": "app/storage.py", "description": "Saving notes"}'),
    ("failed_approach", '{"approach": "Locking app/storage.py with flock", "symptom": "NFS"}'),
    ("gotcha", "app/storage.py and app/cache.py share the notes folder"),
]
"""memories naming app/storage.py: more than a call tells (3), one out of force, one naming
another file too (told once, through the first file answered), of every kind the answer
orders"""


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
    assert imported == []
    # Three of five in force: what the file is, then its gotchas (newest first).
    lines = [line for line in orjson.loads(told)["hookSpecificOutput"]["additionalContext"]
             .splitlines() if line.startswith("- ")]
    assert [line.split(":")[0] for line in lines] == ["- codebase_discovery", "- gotcha",
                                                        "- gotcha"]
    assert "share the notes folder" in lines[1] and "rename() is not atomic" in lines[2]
    assert run(project, call(project, "quick", "Edit", storage)) == ("{}\n", [])
    assert run(project, call(project, "quick", "Bash", {"command": "cat app/storage.py"})) == (
        "{}\n", [])


@pytest.mark.parametrize("name", ["no file", "told before", "fresh file", "fresh files",
                                  "test run", "outside", "not JSON",
                                  "not an object", "huge", "deep", "wrong types",
                                  "wrong input types"])
def test_every_payload_gets_the_whole_ways_answer(project: Path, name: str) -> None:
    storage = {"file_path": str(project / "app" / "storage.py")}

    def given(session: str) -> bytes:
        return {
            "no file": call(project, session, "Bash", {"command": "git status"}),
            "told before": call(project, session, "Read", storage),
            "fresh file": call(project, session, "Read", storage),
            "fresh files": call(project, session, "Bash",
                                {"command": "diff app/cache.py app/storage.py"}),
            "test run": call(project, session, "Bash", {"command": "python -m pytest -q"}),
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
    assert answers[0].startswith('{"hookSpecificOutput"') == (name in ("fresh file",
                                                                       "fresh files"))


def test_a_journal_changed_behind_its_index_goes_the_whole_way(tmp_path: Path) -> None:
    folder = tmp_path / "notes-app"
    folder.mkdir()
    assert dualmem("--backend", "file", "init", cwd=folder).returncode == 0
    assert dualmem("--backend", "file", "add", "--kind", "gotcha", "--name", "cache",
                   "--body", "app/cache.py keeps one entry per note", cwd=folder).returncode == 0
    home = folder / ".dualmem"
    project = orjson.loads((home / "project.json").read_bytes())["project_id"]
    # Another tool (a git pull, a person) writes a memory into the journal's folder; the
    # index has not taken it in yet.
    behind = Episode.create(group_id=project, kind="gotcha", name="cache expiry",
                            body="app/cache.py entries never expire")
    lay_down(home / "files", [behind])
    cache = {"file_path": str(folder / "app" / "cache.py")}
    told, imported = run(folder, call(folder, "first", "Read", cache))
    assert "never expire" in told and "memory.cli" in imported
    # That open took it in: the index answers the next session.
    told, imported = run(folder, call(folder, "second", "Read", cache))
    assert "never expire" in told and imported == []
    # A bullet typed into the gotchas view is a memory the index has not seen either.
    view = next((home / "files" / "views").glob("*/gotchas.md"))
    view.write_text(view.read_text() + "- app/cache.py is cleared on every deploy\n")
    told, imported = run(folder, call(folder, "third", "Read", cache))
    assert "cleared on every deploy" in told and "memory.cli" in imported


def test_a_stop_too_deep_to_parse_goes_the_whole_way(project: Path) -> None:
    # (the quick answers once let json's RecursionError out: a traceback, and no answer)
    home = str(project / ".dualmem")
    assert not nothing_new(["hook", "stop"], lambda: DEEP, {"DUALMEM_HOME": home})
