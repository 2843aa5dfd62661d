"""Special files (a FIFO, ``/dev/zero``, a folder, a dangling link) in every file argument and in
the files a home holds that its commands read: each command answers within its patience, with
its usual answer or dualmem's one-line error (exit status 1; 3 for an import that skipped what
it could not read), never a hang, a traceback or memory running out. Hooks answer and exit 0.

A command that meets a FIFO or ``/dev/zero`` (or hostile YAML) runs as a real process (a hang must
fail the test, not hang the suite), bounded in address space on the file layer so that reading
``/dev/zero`` whole fails at once; one that meets a folder or a dangling link, which nothing can
wait on or read without end, runs in this process (a process adds only its start-up)."""

from __future__ import annotations

import io
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from faults.children import REPO, child_env
from faults.harness import record
from faults.workload import Tally
from memory.cli import main
from memory.output import PARTIAL_EXIT
from memory.store.project import ensure_project_id

PATIENCE = 90.0
"""seconds one command may take before it counts as hung (a loaded machine is slow)"""
ADDRESS_SPACE = 3 << 30
"""a bound on each command's memory: reading /dev/zero whole hits it in seconds"""


def fifo(path: Path) -> None:
    os.mkfifo(path)


def dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def folder(path: Path) -> None:
    path.mkdir()


def dangling_link(path: Path) -> None:
    path.symlink_to(path.with_name(f"{path.name}.gone"))


SPECIALS: dict[str, Callable[[Path], None]] = {
    "fifo": fifo, "/dev/zero": dev_zero, "folder": folder, "dangling link": dangling_link,
}
HAZARDS = {"fifo", "/dev/zero"}
"""the specials a command could wait on for ever or read without end: met in a process"""


@dataclass
class Answer:
    code: int | None
    """None: still running after ``PATIENCE`` (killed)"""
    out: str
    err: str


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def dualmem(home: Path, *argv: str, stdin: bytes = b"", backend: str = "file",
            alone: bool = True) -> Answer:
    """The command line's answer: in a process of its own (``alone``), or in this one."""
    if not alone:
        return _here(home, *argv, stdin=stdin, backend=backend)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "memory", "--home", str(home), "--backend", backend, *argv],
            input=stdin, capture_output=True, timeout=PATIENCE, cwd=REPO, env=child_env(),
            # Kùzu maps far more address space than any bound allows (issue 27, item 18).
            preexec_fn=_bounded if backend == "file" else None, check=False)
    except subprocess.TimeoutExpired as exc:
        return Answer(None, "", (exc.stderr or b"").decode(errors="replace"))
    return Answer(done.returncode, done.stdout.decode(errors="replace"),
                  done.stderr.decode(errors="replace"))


def _here(home: Path, *argv: str, stdin: bytes, backend: str) -> Answer:
    out, err, given = io.StringIO(), io.StringIO(), sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["--home", str(home), "--backend", backend, *argv])
    finally:
        sys.stdin = given
    return Answer(code, out.getvalue(), err.getvalue())


def refused(answer: Answer, tally: Tally, *fragments: str, codes: tuple[int, ...] = (1,)) -> None:
    """The command ended by itself, with one line of dualmem's own naming ``fragments``."""
    tally.rounds += 1
    if answer.code is None:
        tally.crashed += 1
        pytest.fail(f"hung for {PATIENCE} s: {answer.err[-500:]}")
    if "Traceback" in answer.err or answer.code not in codes:
        tally.crashed += 1
        pytest.fail(f"exit {answer.code}: {answer.err[-1500:]}")
    tally.refused += 1
    if codes == (1,):
        assert answer.err.startswith("dualmem: error: ") and answer.err.count("\n") == 1, (
            answer.err)
    for fragment in fragments:
        assert fragment in answer.err + answer.out, (fragment, answer.err, answer.out)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "project" / ".dualmem"
    ensure_project_id(folder / "project.json", "project")
    return folder


# -- file arguments ---------------------------------------------------------------------------

ARGUMENTS: dict[str, Callable[[Path], list[str]]] = {
    "add --body-file": lambda f: ["add", "--kind", "note", "--name", "n", "--body-file", str(f)],
    "import": lambda f: ["import", str(f)],
    "session save": lambda f: ["session", "save", str(f)],
    "turns record": lambda f: ["turns", "record", str(f)],
    "seed --project-overrides": lambda f: ["seed", "--project-overrides", str(f)],
}


@pytest.mark.parametrize("special", sorted(SPECIALS))
@pytest.mark.parametrize("argument", sorted(ARGUMENTS))
def test_a_special_file_argument_is_refused_by_name(
    home: Path, tmp_path: Path, argument: str, special: str
) -> None:
    named = tmp_path / "named"
    SPECIALS[special](named)
    tally = Tally()
    refused(dualmem(home, *ARGUMENTS[argument](named), alone=special in HAZARDS), tally,
            str(named))
    record("special", "args", tally)


def test_dev_zero_itself_and_a_home_that_is_a_device(home: Path, tmp_path: Path) -> None:
    tally = Tally()
    for argv in ARGUMENTS.values():
        refused(dualmem(home, *argv(Path("/dev/zero"))), tally, "/dev/zero", "not a regular file")
    for command in (["init"], ["add", "--kind", "note", "--name", "n", "--body", "b"]):
        refused(dualmem(Path("/dev/null"), *command, alone=False), tally, "/dev/null")
    record("special", "args", tally)


# -- the home's own files ---------------------------------------------------------------------

READERS = [["init"], ["status"], ["add", "--kind", "note", "--name", "n", "--body", "b"],
           ["list"], ["mcp"]]


@pytest.mark.parametrize("special", sorted(SPECIALS))
def test_a_special_project_file_is_refused_by_every_command_and_hook(
    home: Path, special: str
) -> None:
    project_file = home / "project.json"
    project_file.unlink()
    SPECIALS[special](project_file)
    tally = Tally()
    alone = special in HAZARDS
    for argv in READERS:  # naming the file, or the home it leaves without a mark
        refused(dualmem(home, *argv, alone=alone), tally, str(home))
    for event in ("prompt", "session-start"):
        answer = dualmem(home, "hook", event, stdin=orjson.dumps({"prompt": "retry the calls"}),
                         backend="auto", alone=alone)
        refused(answer, tally, codes=(0,))  # the session goes on, told why in one line
        assert orjson.loads(answer.out) == {} and answer.err.count("\n") == 1, answer.err
        assert str(project_file) in answer.err or "no memory home" in answer.err, answer.err
    record("special", "home", tally)


OVERRIDES = {
    "home": lambda home: home / "entity-overrides.yaml",
    "design": lambda home: home.parent / ".guardkit" / "config" / "entity-overrides.yaml",
}


@pytest.mark.parametrize("special", sorted(set(SPECIALS) - {"dangling link"}))
@pytest.mark.parametrize("where", sorted(OVERRIDES))
def test_special_overrides_are_refused_by_the_commands_that_apply_them(
    home: Path, where: str, special: str
) -> None:
    path = OVERRIDES[where](home)
    path.parent.mkdir(parents=True, exist_ok=True)
    SPECIALS[special](path)
    tally = Tally()
    alone = special in HAZARDS
    for argv in (["context", "--task", "retry the calls"], ["critical", "--task", "retry"]):
        refused(dualmem(home, *argv, alone=alone), tally, str(path), "not a valid overrides file")
    answer = dualmem(home, "list", alone=alone)  # a command applying no overrides is untouched
    assert answer.code == 0, answer.err
    record("special", "home", tally)


def test_a_dangling_link_as_the_homes_overrides_is_refused_and_the_designs_is_none(
    home: Path,
) -> None:
    tally = Tally()
    design = OVERRIDES["design"](home)
    design.parent.mkdir(parents=True)
    dangling_link(design)  # outside the home: a missing file, as ever
    answer = dualmem(home, "context", "--task", "retry the calls", alone=False)
    assert answer.code == 0, answer.err
    dangling_link(OVERRIDES["home"](home))  # the home's own files are never read through links
    refused(dualmem(home, "context", "--task", "retry the calls", alone=False), tally,
            "entity-overrides.yaml: not a valid overrides file: is a symbolic link")
    record("special", "home", tally)


# -- hostile overrides ------------------------------------------------------------------------

HOSTILE_OVERRIDES = {
    "nested 50,000 deep": (("roles: " + "[" * 50_000 + "]" * 50_000 + "\n").encode(),
                           "nested deeper than 32 levels"),
    "not UTF-8": ("roles:\n  player:\n    must_do_additions: [caf\xe9]\n".encode("latin-1"),
                  "not UTF-8 (byte 0xe9"),
    "8 MB": (b"roles:\n  player:\n    must_do_additions:\n" + b"      - do it\n" * 600_000,
             "over the limit of"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_OVERRIDES))
def test_hostile_overrides_are_refused_by_seed_and_context(
    home: Path, tmp_path: Path, case: str
) -> None:
    content, reason = HOSTILE_OVERRIDES[case]
    given = tmp_path / "overrides.yaml"
    given.write_bytes(content)
    tally = Tally()
    refused(dualmem(home, "seed", "--project-overrides", str(given)), tally, reason)
    assert not (home / "entity-overrides.yaml").exists()
    (home / "entity-overrides.yaml").write_bytes(content)
    refused(dualmem(home, "context", "--task", "retry the calls"), tally, reason)
    record("special", "yaml", tally)


# -- Auto-Claude memory -----------------------------------------------------------------------

AUTO_CLAUDE_FILES = ["codebase_map.json", "patterns.md", "gotchas.md",
                     "session_insights/session_001.json"]


@pytest.mark.parametrize("special", sorted(SPECIALS))
def test_special_auto_claude_files_are_skipped_and_named(
    home: Path, tmp_path: Path, special: str
) -> None:
    memory = tmp_path / "spec" / "memory"
    (memory / "session_insights").mkdir(parents=True)
    (memory / "session_insights" / "session_002.json").write_bytes(orjson.dumps(
        {"session_number": 2, "what_worked": ["Running the focused test first"]}))
    for name in AUTO_CLAUDE_FILES:
        SPECIALS[special](memory / name)
    tally = Tally()
    answer = dualmem(home, "--json", "migrate", "--from-auto-claude", str(memory),
                     alone=special in HAZARDS)
    refused(answer, tally, codes=(PARTIAL_EXIT,))
    report = orjson.loads(answer.out)
    assert sorted(skip["path"] for skip in report["skipped_files"]) == sorted(
        str(memory / name) for name in AUTO_CLAUDE_FILES)
    assert report["written"] > 0  # the good session, read as ever
    record("special", "import", tally)


def test_a_spec_folder_whose_name_is_not_utf8_imports(home: Path, tmp_path: Path) -> None:
    memory = Path(os.fsdecode(os.fsencode(tmp_path) + b"/specs/\xff-spec/memory"))
    memory.mkdir(parents=True)
    (memory / "patterns.md").write_text("- Retry the flaky calls\n")
    tally = Tally(rounds=1)
    for _ in range(2):  # and again: the ledger knows it by the same name
        answer = dualmem(home, "--json", "migrate", "--from-auto-claude", str(tmp_path),
                         alone=False)
        assert answer.code == 0 and "Traceback" not in answer.err, answer.err
    report = orjson.loads(answer.out)
    assert [spec["spec"] for spec in report["specs"]] == ["\\xff-spec"]
    assert (report["written"], report["unchanged"]) == (0, 1)
    tally.acknowledged += 1
    record("special", "import", tally)


@pytest.fixture(scope="module")
def graph_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with a graph, a journal and a ledger: made once, copied by each test."""
    home = tmp_path_factory.mktemp("made") / "project" / ".dualmem"
    for argv in (["add", "--kind", "pattern", "--name", "n", "--body", "Retry the calls"],
                 ["migrate"]):
        answer = dualmem(home, *argv, backend="auto", alone=False)
        assert answer.code == 0, answer.err
    assert (home / "graph" / "journal.json").is_file()
    assert (home / "migration" / "ledger.sqlite3").is_file()
    return home


def copied(home: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(home.parent, tmp_path / "project", symlinks=True)) / home.name


# Not a FIFO: the graph's holder writes the note with a plain write, which waits for a reader
# (the writes of the home are item 9's, made with safe_files.open_for_write).
@pytest.mark.parametrize("special", sorted(set(SPECIALS) - {"fifo"}))
def test_a_special_graph_position_note_is_passed_over(
    graph_home: Path, tmp_path: Path, special: str
) -> None:
    home = copied(graph_home, tmp_path)
    (home / "graph" / "journal.json").unlink()
    SPECIALS[special](home / "graph" / "journal.json")  # a note beside the graph: a cache
    answer = dualmem(home, "--json", "status", backend="auto", alone=special in HAZARDS)
    assert answer.code == 0 and "Traceback" not in answer.err, answer.err
    assert orjson.loads(answer.out)["dual"]["journal"] == 1
    record("special", "home", Tally(rounds=1))


@pytest.mark.parametrize("special", sorted(set(SPECIALS) - {"dangling link"}))
def test_a_special_migration_ledger_is_refused_by_name(
    graph_home: Path, tmp_path: Path, special: str
) -> None:
    home = copied(graph_home, tmp_path)
    ledger = home / "migration" / "ledger.sqlite3"
    for each in ledger.parent.iterdir():
        each.unlink()
    SPECIALS[special](ledger)
    tally = Tally()
    for argv in (["status"], ["migrate"]):
        refused(dualmem(home, *argv, backend="auto", alone=special in HAZARDS), tally,
                str(ledger), "not a regular file")
    record("special", "home", tally)
