"""Which failures a session fixed: a check of the same kind passing after the edits (a task
runner's task is the check its name says), a pasted failure in a prompt, a tool's call that met a
missing path and the call that then worked; and what is no failure (a call cancelled because
its sibling failed, a tool's own rules)."""

from __future__ import annotations

from pathlib import Path

from capture.conftest import Project
from capture.shapes import Transcript
from memory.capture.checks import classify, failed, key_line
from memory.capture.session import Session
from memory.capture.transcript import parse_line

CWD = "/home/ana/notes-app"
LINT_OUTPUT = ("[lint] $ golangci-lint run ./...\n"
               "redact/redact.go:17:6: exported: func name will be used as redact.RedactString "
               "by other packages, and that stutters (revive)\n"
               "1 issues:\n* revive: 1\n[lint] ERROR task failed")


def fold(t: Transcript) -> Session:
    session = Session(root=CWD)
    for line in t.data().splitlines():
        session.feed(parse_line(line))
    return session


def test_a_task_runners_task_is_the_check_its_name_says() -> None:
    assert classify("mise run lint 2>&1").kind == "lint"
    assert classify("cd app && make test").kind == "test"
    assert classify("npm run build").kind == "build"
    assert classify("mise run fmt").tool == "command:mise run fmt"
    assert classify("mise run lint:gomod").tool == classify("golangci-lint run").tool


def test_a_linters_finding_is_the_key_line_not_the_runners_verdict() -> None:
    assert key_line(LINT_OUTPUT).startswith("redact/redact.go:17:6: exported: func name")


def test_a_failed_lint_is_fixed_by_the_next_passing_lint_not_by_a_formatter() -> None:
    t = Transcript(CWD)
    t.prompt("Redact secrets")
    t.bash("mise run lint 2>&1", LINT_OUTPUT, code=1)
    t.edit("redact/redact.go")
    t.bash("mise run fmt 2>&1", "formatted")
    t.bash("mise run lint 2>&1", "[lint] $ golangci-lint run ./...\n0 issues.")
    [fixed] = fold(t).fixed
    assert (fixed["kind"], fixed["fixed_by"]) == ("lint", "mise run lint 2>&1")
    assert "stutters" in fixed["error"] and fixed["changed"] == ["redact/redact.go"]


def test_a_call_cancelled_by_its_failing_sibling_is_no_failure() -> None:
    t = Transcript(CWD)
    t.prompt("Lint")
    t.tool("Bash", {"command": "mise run lint:shellcheck"},
           "<tool_use_error>Cancelled: parallel tool call Bash(mise run lint:gofmt) errored"
           "</tool_use_error>", "Error: cancelled", error=True)
    t.edit("a.go")
    t.bash("mise run lint:shellcheck", "ok")
    session = fold(t)
    assert session.fixed == [] and session.failing == {}


def test_a_failure_pasted_in_a_prompt_is_fixed_by_the_check_passing_after_the_edits() -> None:
    t = Transcript(CWD)
    t.prompt("I get this:\n[lint:go] cmd/app/main.go:45:9: error returned from external package "
             "is unwrapped (wrapcheck)\n[lint:go] 1 issues:\n[lint:go] * wrapcheck: 1")
    t.edit("cmd/app/main.go")
    t.bash("golangci-lint run ./cmd/app/... 2>&1 | tail -20", "0 issues.")
    [fixed] = fold(t).fixed
    assert fixed["error"].startswith("cmd/app/main.go:45:9: error returned from external")
    assert fixed["changed"] == ["cmd/app/main.go"]


def test_a_read_of_a_missing_file_is_fixed_by_the_read_that_then_works() -> None:
    t = Transcript(CWD)
    t.prompt("Where is the logger?")
    t.tool("Read", {"file_path": f"{CWD}/logging/logging.go"},
           "<tool_use_error>File does not exist.</tool_use_error>", "Error", error=True)
    t.tool("Glob", {"pattern": "**/logging/*.go"}, f"{CWD}/logging/logger.go", {})
    t.read("logging/logger.go")
    [fixed] = fold(t).fixed
    assert fixed["error"] == "Read logging/logging.go: File does not exist."
    assert fixed["fixed_by"] == "Read logging/logger.go"


def test_a_tools_own_rules_and_a_late_retry_are_no_fix() -> None:
    t = Transcript(CWD)
    t.prompt("Edit it")
    t.tool("Edit", {"file_path": f"{CWD}/a.py", "old_string": "a", "new_string": "b"},
           "<tool_use_error>File has not been read yet. Read it first before writing to it."
           "</tool_use_error>", "Error", error=True)
    t.read("a.py")
    t.edit("a.py")
    t.tool("Read", {"file_path": f"{CWD}/b"}, "EISDIR: illegal operation on a directory",
           "Error", error=True)
    for n in range(4):
        t.bash(f"ls b/{n}", "x")
    t.read("docs/usage.md")
    assert fold(t).fixed == []


async def test_a_tool_calls_fix_is_kept_as_a_gotcha_saying_what_worked_instead(
        project: Project, tmp_path: Path) -> None:
    t = Transcript(str(project.folder))
    t.prompt("Check the lint configuration")
    t.tool("Read", {"file_path": f"{project.folder}/.golangci.yml"},
           "<tool_use_error>File does not exist. Did you mean .golangci.yaml?</tool_use_error>",
           "Error", error=True)
    t.read(".golangci.yaml")
    await project.capture(t.save(tmp_path / "s.jsonl"))
    [gotcha] = await project.by_kind("gotcha")
    assert gotcha.data["gotcha"] == ("A tool call failed: Read .golangci.yml: File does not "
                                     "exist. Did you mean .golangci.yaml?")
    assert gotcha.data["fix"] == "`Read .golangci.yaml` instead"
    [insight] = await project.by_kind("session_insight")
    assert insight.data["what_worked"] == ["`Read .golangci.yaml` instead of `Read .golangci.yml`"]
    assert insight.data["recommendations_for_next_session"] == []


def test_a_task_runners_failed_task_says_why_not_the_runner() -> None:
    output = ("Exit code 1\n[lint:go] $ mise-tasks/lint/go\n[lint:gomod] $ mise-tasks/lint/gomod\n"
              "[lint:gomod] go module files modified, please commit result of 'go mod tidy'!\n"
              "[lint:gomod]  M go.mod\n[lint:go] 0 issues.\n[lint:go] Finished in 2.17s\n"
              "Finished in 2.17s\n[lint:gomod] ERROR task failed")
    assert key_line(output) == "go module files modified, please commit result of 'go mod tidy'!"
    gofmt = ("Exit code 1\n[lint:gofmt] $ mise-tasks/lint/gofmt\n"
             "[lint:gofmt] These .go files need to be formatted:\n[lint:gofmt] \n"
             "[lint:gofmt] cmd/main.go\n[lint:gofmt] ERROR task failed")
    assert key_line(gofmt) == "These .go files need to be formatted:"


def test_a_pasted_failure_without_a_line_saying_why_is_not_kept() -> None:
    t = Transcript(CWD)
    t.prompt("can you help me understand:\n\n❯ mise run lint:licenses\n[lint:licenses] $ check\n"
             "Found 1 dependency with a licence not allowed\n[lint:licenses] ERROR task failed")
    assert fold(t).failing == {}


def test_every_shape_of_a_failed_runs_verdict_is_a_failure() -> None:
    passed = "".join(f"tests/test_part{i}.py ....\n" for i in range(40))
    for verdict in ("3 failed in 2.1s", "FAILED tests/a.py::t", "ERROR: cannot import", "2 errors",
                    "Found 2 errors in 1 file", "src/a.ts(3,1): error TS2304: x", "error: oops",
                    "error[E0308]: mismatched types", "Build failed", "--- FAIL: TestX",
                    "Traceback (most recent call last):", "npm ERR! code 1",
                    "sh: foo: command not found", "exit status 2", "3 issues found"):
        assert failed("test", False, passed + verdict), verdict
    assert not failed("test", False, passed + "160 passed in 2.0s")
