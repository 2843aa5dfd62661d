"""What a shell command was (a test run, a build, a type check, a lint, a commit, anything
else), whether it passed, and the one line of its output that says why it failed.

A command's exit status is not enough: sessions pipe test runs through ``tail``, which exits 0,
so a check's verdict is also read from its output (``3 failed``, ``Found 2 errors``). A task
runner's task (``mise run lint``, ``make test``, ``npm run build``) is the check its name says.
Two runs are the same check when they are of the same kind (a failed ``go test ./...`` is fixed
by a later passing ``go test ./pkg/``, a failed ``mise run lint`` by ``golangci-lint run``)."""

from __future__ import annotations

import re

from backends.lean_typing import NamedTuple
from backends.patterns import lazy

_KINDS = (
    ("test", lazy(
        r"\b(?:pytest|py\.test|unittest|jest|vitest|mocha|ava|rspec|phpunit|ctest|tox|nox"
        r"|go test|cargo (?:test|nextest)|(?:npm|pnpm|yarn|bun)(?: run)? test(?::\S+)?"
        r"|deno test|mix test|gradle test|mvn test|dotnet test|make (?:test|check))\b")),
    ("typecheck", lazy(r"\b(?:mypy|pyright|tsc|cargo check|go vet|flow check)\b")),
    ("lint", lazy(
        r"\b(?:ruff|flake8|pylint|eslint|biome|black --check|prettier --check|clippy"
        r"|golangci-lint|shellcheck|rubocop|(?:npm|pnpm|yarn)(?: run)? lint)\b")),
    ("build", lazy(
        r"\b(?:(?:npm|pnpm|yarn|bun)(?: run)? build|cargo build|go build|make|cmake|gradle"
        r"|mvn|docker build|dotnet build|tsc -b|vite build|webpack|python -m build)\b")),
)
# A task runner and its task: ``mise run lint:go``, ``just test``, ``npm run build``.
_TASK = lazy(
    r"(?:^|[;&|(\n])\s*(?:[$>%#\u276f]\s+)?(?:\w+=\S*\s+)*"
    r"((?:mise|npm|pnpm|yarn|bun|hatch|pdm|poetry|uv|cargo) run|mise r|cargo make|just|make"
    r"|task|rake|invoke|nox -s|tox -e)\s+(?:-\S+\s+)*([A-Za-z][\w:.-]*)",
    re.MULTILINE)
_RUNNERS = ("mise", "npm", "pnpm", "yarn", "bun", "hatch", "pdm", "poetry", "uv", "cargo", "just",
            "make", "task", "rake", "invoke", "nox", "tox")
"""a word of each runner ``_TASK`` names: a command holding none runs no task, said without
compiling ``_TASK``"""
_TASK_KINDS = (("test", lazy(r"test|spec|e2e|check$", re.IGNORECASE)),
               ("typecheck", lazy(r"type|mypy|pyright|tsc", re.IGNORECASE)),
               ("lint", lazy(r"lint|vet|clippy|shellcheck|fmt-?check|format-?check|style",
                                   re.IGNORECASE)),
               ("build", lazy(r"build|compile|bundle", re.IGNORECASE)))
_FAILED = lazy(
    r"\b\d+ (?:failed|errors?)\b|^FAILED\b|^ERROR\b|\bFound \d+ errors?\b|error TS\d+"
    r"|^error(?:\[\w+\])?:|\bBuild failed\b|\bFAIL\b|Traceback \(most recent call last\)"
    r"|\bnpm ERR!|\bcommand not found\b|\bexit (?:code|status) [1-9]|\b[1-9]\d* issues?\b",
    re.MULTILINE)
_FAILURE_CLUES = ("fail", "FAIL", "rror", "ERR", "Traceback", "command not found", "exit code",
                  "exit status", " issue")
"""a piece of each of ``_FAILED``'s shapes: an output holding none of them (most passing runs)
is no failure, said without ``_FAILED``'s slower scan"""
_PASSED = lazy(r"\b\d+ passed\b|\bSuccess: no issues found|\bAll checks passed"
                     r"|\bTests? passed\b|^ok\b|\bPASS\b|\b0 errors\b", re.MULTILINE)
# The lines that say why, best first: an assertion or exception, a compiler's error, a failed
# test's name, then anything that says "error".
_KEY_LINES = (
    lazy(r"^E\s{2,}(\S.*)$", re.MULTILINE),
    lazy(r"^\s*((?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Failure)\b:?.*)$", re.MULTILINE),
    # a compiler's or linter's finding: ``redact/redact.go:17:6: exported: ... stutters``
    lazy(r"^\s*((?:[\w.-]+/)*[\w.-]+\.\w+:\d+(?::\d+)?:\s*\S.*)$",
               re.MULTILINE),
    lazy(r"^(.*\berror(?:\[\w+\])?(?: TS\d+)?:.*)$", re.MULTILINE | re.IGNORECASE),
    lazy(r"^((?:FAILED|FAIL|ERROR)\b.*)$", re.MULTILINE),
    lazy(r"^(.*\b(?:not found|No such file|cannot|could not|failed)\b.*)$",
               re.MULTILINE | re.IGNORECASE),
)
_MESSAGE = lazy(  # -m "...", or the heredoc Claude Code writes: -m "$(cat <<'EOF' ...
    r"""\s-(?:[a-z]*m|-message)[= ]?\s*(?:"\$\(cat <<'?EOF'?\s*\n(.*?)\n|(["'])(.*?)\2)""",
    re.DOTALL)
_EXIT_LINE = lazy(r"^(?:Error: )?Exit code \d+$")
MAX_KEY_LINE = 300
_VERDICT_CHARS = 4000
"""of a run's output, where its verdict is read: the end"""
_LONGEST_LINE = 1000
_ANSI = lazy(r"\x1b\[[0-9;?]*[A-Za-z]")
_TASK_FAILED = lazy(r"^\[([\w:.-]+)\] ERROR task failed", re.MULTILINE)
_RUNNERS_OWN = lazy(r"ERROR task failed$|Finished in \S+$|\$ ")
"""a task runner's lines: its verdict, its timing, the command it runs"""
_RUNNERS_OWN_STARTS = ("ERROR task failed", "Finished in ", "$ ")
_TASK_PREFIX = lazy(r"^\[[\w:.-]+\] ?", re.MULTILINE)
"""the name a task runner sets before each line of its task's output (``[lint:go] ...``)"""


class Run(NamedTuple):
    kind: str
    """test, typecheck, lint, build, commit or command"""
    tool: str
    """what makes two runs the same check: its kind (``test``), or for a command its first
    words (``command:git push``)"""


def classify(command: str, *, words: bool = True) -> Run:
    """The check ``command`` runs (the first kind of ``_KINDS`` it names: ``ruff check &&
    pytest`` is a test run); without ``words``, a command of no known check is ``command:``
    alone (its words are not split)."""
    if "git commit" in command and re.search(r"\bgit commit\b", command):
        return Run("commit", "commit:git")
    task = _TASK().search(command) if any(runner in command for runner in _RUNNERS) else None
    named = next((kind for kind, name in _TASK_KINDS if name().search(task.group(2))), "") \
        if task is not None else ""
    for kind, shape in _KINDS:
        if kind == named or shape().search(command):
            return Run(kind, kind)
    if task is not None:
        return Run("command", f"command:{task.group(1)} {task.group(2)}")
    return Run("command", "command:" + " ".join(_words(command)[:2] if words else ()))


def pasted(text: str) -> Run:
    """The check whose output ``text`` holds: the command it names, or the task its lines are
    prefixed with (``[lint:go] ...``); a prompt is no command, whose words would say which."""
    run = classify(text, words=False)
    prefix = _TASK_PREFIX().search(text)
    if run.kind == "command" and prefix is not None:
        kind = next((kind for kind, name in _TASK_KINDS if name().search(prefix.group(0))), "")
        return Run(kind, kind) if kind else run
    return run


def failed(kind: str, is_error: bool, output: str) -> bool:
    """Did the run fail? Its exit status, or for a check the verdict at the end of its output."""
    if is_error:
        return True
    if kind in ("command", "commit"):
        return False
    end = _readable(output[-_VERDICT_CHARS:])
    if not any(clue in end for clue in _FAILURE_CLUES):
        return False
    return bool(_FAILED().search(end)) and not (
        _PASSED().search(end) and not re.search(r"\b[1-9]\d* (?:failed|errors?)\b", end))


def key_line(output: str, *, first: bool = True) -> str:
    """The line of a failed run's output that says why, or (``first``) its first non-empty
    line; of a task runner's output, a line of the task that failed (``[lint:gomod] ERROR task
    failed``: what ``lint:gomod`` said), never the runner's own words."""
    output = _readable(_failed_task(output))
    for shape in _KEY_LINES:
        for found in shape().finditer(output):
            line = found.group(1).strip()
            if line and not _exit_line(line) and not _runners_own(line):
                return line[:MAX_KEY_LINE]
    for line in output.splitlines() if first else ():
        if line.strip() and not _exit_line(line.strip()) and not _runners_own(line.strip()):
            return line.strip()[:MAX_KEY_LINE]
    return ""


def _failed_task(output: str) -> str:
    """The lines of the task a runner says failed (without their prefix) when they say more
    than the runner's own words (a task run alone writes its lines unprefixed); else all."""
    failed = _failed_tasks(output)
    if not failed:
        return output
    prefix = f"[{failed[-1]}]"
    said = [line[len(prefix):].strip() for line in output.splitlines()
            if line.startswith(prefix)]
    return "\n".join(said) if any(line and not _runners_own(line) for line in said) else output


# Each pattern below is compiled only for text holding what every one of its matches holds:
# most output holds none of it (tests/capture/test_check_clues.py).
def _failed_tasks(output: str) -> list[str]:
    """The tasks a runner says failed (``_TASK_FAILED``)."""
    return _TASK_FAILED().findall(output) if "] ERROR task failed" in output else []


def _exit_line(line: str) -> bool:
    """Is ``line`` an exit status (``_EXIT_LINE``)?"""
    return "Exit code " in line and bool(_EXIT_LINE().match(line))


def _runners_own(line: str) -> bool:
    """Is ``line`` a task runner's own (``_RUNNERS_OWN``)?"""
    return line.startswith(_RUNNERS_OWN_STARTS) and bool(_RUNNERS_OWN().match(line))


def says_error(output: str) -> bool:
    """Does the output hold a line that says what went wrong (not only an exit status)?"""
    output = _readable(output)
    return any(shape().search(output) for shape in _KEY_LINES)


def summary_line(output: str) -> str:
    """A check's last verdict line (``12 passed in 0.4s``), or ''."""
    for line in reversed(_readable(output[-_VERDICT_CHARS:]).splitlines()):
        if _PASSED().search(line) or _FAILED().search(line):
            return line.strip(" =")[:MAX_KEY_LINE]
    return ""


def commit_subject(command: str) -> str:
    """The message of ``git commit -m MESSAGE`` (its first line), or ''."""
    found = _MESSAGE().search(command)
    if not found:
        return ""
    text = found.group(1) if found.group(1) is not None else found.group(3)
    return text.strip().split("\n", 1)[0][:200]


def _readable(output: str) -> str:
    """The lines a person would read, without terminal colours: a line of thousands of
    characters (a progress bar, a minified bundle) says nothing, and costs every pattern a
    scan."""
    text = "\n".join(line for line in output.splitlines() if len(line) <= _LONGEST_LINE)
    if "\x1b" in text:  # no colours, no pattern to compile (most output)
        text = _ANSI().sub("", text)
    if text.startswith("[") or "\n[" in text:
        text = _TASK_PREFIX().sub("", text)
    return text


def _words(command: str) -> list[str]:
    import shlex  # only a command of no known check needs it

    try:
        words = shlex.split(command.split("\n", 1)[0])
    except ValueError:
        words = command.split()
    # ``cd x && cmd``, env assignments: what runs is the command after them
    while words and ("=" in words[0] or words[0] in ("cd", "&&", "sudo", "env", "time")):
        words = words[2:] if words[0] == "cd" else words[1:]
    return words
