"""``dualmem hook post-tool-use``: real processes fed the PostToolUse documents Claude Code
sends, on a real home; what the session was told is told once."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_hooks import SESSION, common, context_of, hook, new_project


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One project for every test; each test is a session of its own (what a session was
    told is kept per session)."""
    return new_project(tmp_path_factory.mktemp("tool"), [
        ("gotcha", "app/storage.py: rename() is not atomic across file systems; keep temp "
                   "files beside the target"),
        ("pattern", "Every test builds notes with tests/factories.py, never JSON fixtures"),
        ("gotcha", "The CI runner has no network: vendor test fixtures"),
    ])


def _tool(project: Path, tool: str, tool_input: dict[str, object],
          session: str) -> dict[str, object]:
    document = {**common(project, "PostToolUse"), "session_id": session, "tool_name": tool,
                "tool_input": tool_input, "tool_response": {"success": True},
                "tool_use_id": "toolu_01ABC"}
    output, stderr = hook("post-tool-use", document, cwd=project)
    assert stderr == ""
    return output


def test_a_file_read_brings_its_memories_once_per_session(project: Path) -> None:
    storage = str(project / "app" / "storage.py")
    first = context_of(_tool(project, "Read", {"file_path": storage}, SESSION), "PostToolUse")
    assert "rename() is not atomic" in first and "CI runner" not in first
    assert "About app/storage.py" in first
    # The same file again, by another tool or a command naming it: nothing new to say.
    assert _tool(project, "Edit", {"file_path": storage, "old_string": "a",
                                   "new_string": "b"}, SESSION) == {}
    assert _tool(project, "Bash", {"command": "cat app/storage.py",
                                   "description": "Show the file"}, SESSION) == {}
    # Another session is told again.
    again = _tool(project, "Read", {"file_path": storage}, session="another-session")
    assert "rename() is not atomic" in context_of(again, "PostToolUse")


def test_tools_and_files_memory_says_nothing_of_add_nothing(project: Path) -> None:
    session = "silent-session"
    assert _tool(project, "Write", {"file_path": str(project / "app" / "unknown.py"),
                                    "content": "x = 1\n"}, session) == {}
    assert _tool(project, "Bash", {"command": "ls -la"}, session) == {}
    assert _tool(project, "Grep", {"pattern": "storage"}, session) == {}
    assert _tool(project, "Read", {"file_path": "/etc/hostname"}, session) == {}


def test_a_test_run_brings_what_is_known_of_the_tests(project: Path) -> None:
    session = "testing-session"
    output = _tool(project, "Bash", {"command": "python -m pytest -q"}, session)
    assert "tests/factories.py" in context_of(output, "PostToolUse")
    edit = _tool(project, "MultiEdit", {"file_path": str(project / "tests" / "factories.py"),
                                        "edits": []}, session)
    assert edit == {}  # the same memory was shown for the test run


def test_the_prompt_hook_adds_what_is_known_of_the_files_worked_on(project: Path) -> None:
    session = "prompting-session"
    _tool(project, "Read", {"file_path": str(project / "app" / "storage.py")}, session)
    document = {**common(project, "UserPromptSubmit"), "session_id": session,
                "prompt": "Make saving faster"}
    output, _ = hook("prompt", document, cwd=project)
    said = context_of(output, "UserPromptSubmit")
    assert "About the files you work on" in said and "rename() is not atomic" in said
