"""``dualmem hook``: real processes fed the JSON documents Claude Code sends, on real homes.

Each hook prints one JSON document in Claude Code's format and exits 0, whatever happens."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from memory.cli import main
from memory.context import estimate_tokens
from plugin.processes import REPO, dualmem

SESSION = "3f1c2a9e-5b7d-4c1e-9a2b-8d6f0e4c7a15"


def hook(event: str, document: dict[str, Any], *extra: str,
         cwd: Path = REPO) -> tuple[dict[str, Any], str]:
    """Run one hook as Claude Code does; returns its JSON output and its stderr, after checking
    that it exited 0 and printed exactly one JSON object."""
    done = dualmem("--backend", "file", "hook", event, *extra, stdin=orjson.dumps(document),
                   cwd=cwd)
    assert done.returncode == 0, done.stderr
    output = orjson.loads(done.stdout)
    assert isinstance(output, dict)
    return output, done.stderr.decode()


def context_of(output: dict[str, Any], event: str) -> str:
    """The additional context of a hook's output, checking its shape."""
    assert set(output) == {"hookSpecificOutput"}
    specific = output["hookSpecificOutput"]
    assert set(specific) == {"hookEventName", "additionalContext"}
    assert specific["hookEventName"] == event
    assert isinstance(specific["additionalContext"], str) and specific["additionalContext"]
    return specific["additionalContext"]


def common(project: Path, event: str, transcript: Path | None = None) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": str(transcript or project / "transcript.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": event,
    }


MEMORIES = [
    ("gotcha", "rename() is not atomic across file systems; keep temp files beside the target"),
    ("pattern", "Write notes to a temp file, fsync, then rename over the original"),
    ("gotcha", "The CI runner has no network: vendor test fixtures"),
]


def new_project(parent: Path, memories: Sequence[tuple[str, str]] = MEMORIES) -> Path:
    """A project folder with an initialised home holding ``memories`` (kind, text). Made by
    the command line in this process: the hooks under test run as real processes, and a
    process per command here cost each test four more starts."""
    folder = parent / "notes-app"
    folder.mkdir()
    home = ["--home", str(folder / ".dualmem"), "--backend", "file"]
    assert main([*home, "init"]) == 0
    for kind, text in memories:
        assert main([*home, "add", "--kind", kind, "--name", text[:40], "--body", text]) == 0
    return folder


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One such project for the tests whose hooks only read it."""
    return new_project(tmp_path_factory.mktemp("shared"))


@pytest.fixture
def own_project(tmp_path: Path) -> Path:
    """A project of the test's own, for a test whose hooks store memories."""
    return new_project(tmp_path)


def test_session_start_gives_the_project_memory_in_brief(project: Path) -> None:
    document = common(project, "SessionStart") | {"source": "startup"}
    output, _ = hook("session-start", document, cwd=project)
    context = context_of(output, "SessionStart")
    assert "rename() is not atomic" in context and "temp file, fsync" in context
    assert "Gotcha:" in context  # how to keep what the session learns
    small, _ = hook("session-start", document, "--tokens", "60", cwd=project)
    assert estimate_tokens(context_of(small, "SessionStart")) <= 60


def test_session_start_with_a_task_gives_that_task_context(project: Path) -> None:
    document = common(project, "SessionStart") | {"source": "resume"}
    output, _ = hook("session-start", document, "--task", "Keep temp files beside the target",
                     "--tokens", "800", cwd=project)
    context = context_of(output, "SessionStart")
    assert "rename" in context and estimate_tokens(context) <= 800


def test_prompt_adds_only_memories_that_clear_the_threshold(project: Path) -> None:
    asked = common(project, "UserPromptSubmit") | {
        "prompt": "Saving fails on the NFS mount: is rename atomic across file systems?"}
    output, _ = hook("prompt", asked, cwd=project)
    context = context_of(output, "UserPromptSubmit")
    assert "rename() is not atomic" in context and "vendor test fixtures" not in context
    unrelated = common(project, "UserPromptSubmit") | {"prompt": "Draw a unicorn in ASCII art"}
    assert hook("prompt", unrelated, cwd=project)[0] == {}
    slash = common(project, "UserPromptSubmit") | {"prompt": "/compact rename temp file"}
    assert hook("prompt", slash, cwd=project)[0] == {}


def test_the_home_is_found_from_the_sessions_folder(project: Path) -> None:
    deeper = project / "src" / "notes"
    deeper.mkdir(parents=True)
    asked = common(deeper, "UserPromptSubmit") | {"prompt": "rename temp file atomic"}
    # Run from elsewhere: only the input's cwd leads to the project.
    output, _ = hook("prompt", asked, cwd=deeper.parents[2])
    assert "rename() is not atomic" in context_of(output, "UserPromptSubmit")


def _transcript(path: Path, *replies: str) -> Path:
    lines = [{"type": "user", "sessionId": SESSION, "message": {
        "role": "user", "content": "Gotcha: said by the user, not learned by the session"}}]
    for n, reply in enumerate(replies):
        lines.append({
            "type": "assistant", "sessionId": SESSION, "uuid": f"a{n}",
            "message": {"id": f"msg_{n}", "type": "message", "role": "assistant",
                        "model": "claude-sonnet-4-5", "stop_reason": "end_turn",
                        "content": [
                            {"type": "text", "text": reply},
                            {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash",
                             "input": {"command": "pytest -q"}},
                        ]},
        })
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n{truncated\n")
    return path


def _listed(project: Path) -> list[dict[str, Any]]:
    done = dualmem("--backend", "file", "list", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)["episodes"]  # type: ignore[no-any-return]


def test_stop_records_what_the_session_marked_as_learned(own_project: Path) -> None:
    transcript = _transcript(
        own_project / "transcript.jsonl",
        "Fixed the flaky save.\n\n- **Gotcha:** fsync the folder too, or a rename can be lost\n"
        "Pattern: retry a save once on EBUSY\n"
        "```\nGotcha: inside a code block, so not a lesson\n```\n"
        "Discovery: `notes/store.py`: saves notes atomically",
        "Nothing new learned this turn.",
    )
    before = len(_listed(own_project))
    document = common(own_project, "Stop", transcript) | {"stop_hook_active": False}
    output, _ = hook("stop", document, cwd=own_project)
    # Stop says what it kept: the lessons, and what capture derived of the session.
    assert output == {"systemMessage": "dualmem kept 1 session insight, 1 task outcome, "
                      "1 file discovery, 1 gotcha, 1 pattern"}
    learned = {(e["kind"], e["name"]) for e in _listed(own_project)[before:]
               if e["source"] == "claude_code"}
    assert learned == {
        ("gotcha", "fsync the folder too, or a rename can be lost"),
        ("pattern", "retry a save once on EBUSY"),
        ("codebase_discovery", "notes/store.py"),
    }
    # Stop runs after every turn: nothing is stored twice, and a Stop with nothing new is quiet.
    again = document | {"stop_hook_active": True,
                        "last_assistant_message": "Gotcha: fsync the folder too, or a rename "
                        "can be lost"}
    assert hook("stop", again, cwd=own_project)[0] == {}
    assert len(_listed(own_project)) == before + 5


@pytest.mark.parametrize(
    ("stdin", "fragment"),
    [
        (b"", "hook input"),
        (b"not json", "hook input"),
        (b"[1, 2]", "hook input"),
        (b'{"hook_event_name": "Stop", "stop_hook_active": "maybe"}', "stop_hook_active"),
    ],
)
def test_a_hook_never_fails_on_bad_input(project: Path, stdin: bytes, fragment: str) -> None:
    for event in ("session-start", "prompt", "stop"):
        done = dualmem("--backend", "file", "hook", event, stdin=stdin, cwd=project)
        assert done.returncode == 0 and orjson.loads(done.stdout) == {}
        err = done.stderr.decode()
        assert err.count("\n") == 1 and fragment in err and "Traceback" not in err


def test_a_hook_without_a_memory_home_says_so_and_goes_on(tmp_path: Path) -> None:
    elsewhere = tmp_path / "no-memory-here"
    elsewhere.mkdir()
    document = common(elsewhere, "UserPromptSubmit") | {"prompt": "anything"}
    output, err = hook("prompt", document, cwd=elsewhere)
    assert output == {} and "dualmem init" in err and err.count("\n") == 1
    assert not (elsewhere / ".dualmem").exists()


def test_a_wrong_hook_command_line_does_not_block_the_session(project: Path) -> None:
    for argv in (["hook", "prompt", "--frobnicate"], ["hook", "nonsense"], ["hook"]):
        done = dualmem(*argv, stdin=b"{}", cwd=project)
        assert done.returncode == 0 and orjson.loads(done.stdout) == {}, argv
        assert done.stderr.decode().startswith("dualmem hook: ")


@pytest.mark.parametrize("transcript", ["none named", "none there"])
def test_a_stop_given_only_the_reply_keeps_its_lessons(own_project: Path, transcript: str) -> None:
    """A Stop with ``last_assistant_message`` and no transcript to read: its lessons are kept
    (they were ignored once capture read transcripts only)."""
    before = len(_listed(own_project))
    document = common(own_project, "Stop", own_project / "gone.jsonl")
    if transcript == "none named":
        del document["transcript_path"]
    document |= {"stop_hook_active": False, "last_assistant_message": "Gotcha: a reply-only lesson"}
    output, _ = hook("stop", document, cwd=own_project)
    assert output == {"systemMessage": "dualmem kept 1 gotcha"}
    assert [(e["kind"], e["name"]) for e in _listed(own_project)[before:]] == [
        ("gotcha", "a reply-only lesson")]
    assert hook("stop", document, cwd=own_project)[0] == {}  # kept once
    assert len(_listed(own_project)) == before + 1


def test_a_missing_transcript_records_nothing(project: Path) -> None:
    before = len(_listed(project))
    document = common(project, "Stop", project / "gone.jsonl") | {"stop_hook_active": False}
    assert hook("stop", document, cwd=project)[0] == {}
    assert len(_listed(project)) == before


def test_the_example_settings_run_these_hooks_and_this_server() -> None:
    settings = orjson.loads((REPO / "docs" / "claude-settings.json").read_bytes())
    commands = {
        event: [h["command"] for entry in entries for h in entry["hooks"]]
        for event, entries in settings["hooks"].items()
    }
    assert commands == {
        "SessionStart": ["dualmem hook session-start"],
        "UserPromptSubmit": ["dualmem hook prompt"],
        "PostToolUse": ["dualmem hook post-tool-use"],
        "Stop": ["dualmem hook stop"],
        "PreCompact": ["dualmem hook pre-compact"],
        "SessionEnd": ["dualmem hook session-end"],
    }
    assert settings["enabledMcpjsonServers"] == ["dualmem"]
    servers = orjson.loads((REPO / "docs" / "mcp.json").read_bytes())["mcpServers"]
    # The team server's password reaches the server from the user's environment, never from
    # the committed file (the URL itself comes from the home's config.json).
    assert servers == {"dualmem": {"type": "stdio", "command": "dualmem", "args": ["mcp"],
                                   "env": {"DUALMEM_GRAPH_PASSWORD":
                                           "${DUALMEM_GRAPH_PASSWORD:-}"}}}
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "claude mcp add --scope project dualmem -- dualmem mcp" in readme
    shown = readme.split("The settings are:\n\n```json\n", 1)[1].split("```", 1)[0]
    assert orjson.loads(shown) == settings


def test_one_bad_lesson_blocks_none_of_the_others(own_project: Path) -> None:
    # A lesson holding a NUL made every Stop fail, and nothing of the session was ever kept.
    transcript = _transcript(own_project / "transcript.jsonl",
                             "Gotcha: a NUL \x00 inside\nPattern: retry a save once on EBUSY")
    document = common(own_project, "Stop", transcript) | {"stop_hook_active": False}
    output, err = hook("stop", document, cwd=own_project)
    kept = {(e["kind"], e["name"]) for e in _listed(own_project) if e["source"] == "claude_code"}
    assert kept == {("gotcha", "a NUL inside"), ("pattern", "retry a save once on EBUSY")}
    assert "1 gotcha, 1 pattern" in output["systemMessage"]
    assert err.endswith("damaged lines skipped: 1\n")  # the transcript's own cut line


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "folder"])
def test_a_transcript_that_is_no_regular_file_is_refused_at_once(own_project: Path,
                                                                  special: str) -> None:
    # /dev/zero grew until memory ran out; a FIFO with no writer hung the hook.
    path = own_project / "transcript.jsonl"
    if special == "fifo":
        os.mkfifo(path)
    elif special == "folder":
        path.mkdir()
    else:
        path = Path(special)
    document = common(own_project, "Stop", path) | {"stop_hook_active": False}
    output, err = hook("stop", document, cwd=own_project)
    assert output == {} and err.count("\n") == 1 and "not a regular file" in err


@pytest.mark.parametrize("event", ["pre-compact", "session-end"])
def test_pre_compact_and_session_end_capture_too(own_project: Path, event: str) -> None:
    transcript = _transcript(own_project / "transcript.jsonl", "Pattern: one writer per file")
    name = {"pre-compact": "PreCompact", "session-end": "SessionEnd"}[event]
    extra = {"trigger": "auto", "custom_instructions": ""} if event == "pre-compact" else {
        "reason": "prompt_input_exit"}
    output, _ = hook(event, common(own_project, name, transcript) | extra, cwd=own_project)
    assert "1 pattern" in output["systemMessage"]
    assert ("pattern", "one writer per file") in {(e["kind"], e["name"])
                                                  for e in _listed(own_project)}


def test_a_stop_with_nothing_new_loads_nothing_heavy(own_project: Path) -> None:
    # Stop runs after every turn: once the transcript is captured, a Stop costs a stat, a
    # small read and the cursor's load; not the store, not pydantic, not the agent API.
    transcript = _transcript(own_project / "transcript.jsonl", "Pattern: one writer per file")
    document = common(own_project, "Stop", transcript) | {"stop_hook_active": False}
    assert "systemMessage" in hook("stop", document, cwd=own_project)[0]
    script = (
        "import io, sys\n"
        "from memory.cli import main\n"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({orjson.dumps(document)!r}))\n"
        "assert main(['--backend', 'file', 'hook', 'stop']) == 0\n"
        "heavy = {'pydantic', 'fallback.store', 'memory.agent.memories', 'yaml'}\n"
        "print(sorted(heavy & set(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=own_project, capture_output=True,
                          env=os.environ | {"PYTHONPATH": str(REPO)}, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout == b"{}\n", done.stderr
    assert done.stderr.decode().strip() == "[]"
