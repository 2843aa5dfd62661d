"""Symbolic links and foreign owners in and above the home (issue 27, items 9 to 11).

A home is data, and may be hostile: a repository can carry a ``.dualmem`` with links in it, and
anyone may create ``/tmp/.dualmem``. Each round plants one link in a home, runs everyday
commands through the command line of one layer, and checks that nothing outside the home was
written, created or served as a memory (``escaped``), that every command ended with its answer
or one line saying why (``crashed`` otherwise), and that every write acknowledged reads back
once the link is gone (``lost``). A home of another user found above the working folder is
refused, by root too, unless it is named or listed in ``DUALMEM_SAFE_HOMES``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from backends.model import Episode
from fallback import codec
from fallback.layout import file_name
from faults.children import child_env
from faults.harness import LAYERS, record
from faults.workload import Tally
from memory.cli import main

GROUP = "links"
BAIT = "plantedbait"
"""a word only the files outside the home hold: never to be served"""
LURE = "planted outside the home"
"""what reads ask for: the rest of the bait's text (never the bait itself, which they echo)"""
PLANTED = Episode.create(group_id=GROUP, kind="pattern", name=BAIT, body=f"{BAIT} {LURE}",
                         key="planted")

PLANTS = {
    # where in the home: what the link leads to outside ("file", "missing" or "folder")
    "graph/journal.json": "file",
    "graph/owner.json": "file",
    "graph/memory.kuzu.wal": "missing",
    "files/history.jsonl": "file",
    "files/enriched.jsonl": "file",
    "files/.lock": "missing",
    "files/index.sqlite3-wal": "missing",
    "entity-overrides.yaml": "file",
    f"files/views/{GROUP}/patterns.md": "file",
    f"files/episodes/{GROUP}/{file_name(PLANTED.id)}": "file",
    f"files/episodes/{GROUP}": "folder",
    f"files/views/{GROUP}": "folder",
    "files": "folder",
    "graph": "folder",
    "migration": "folder",
}


def bait(name: str) -> bytes:
    """What a file outside the home holds: a memory, in the shape the planted name reads."""
    if name.endswith(".json"):
        return codec.encode(PLANTED)
    return f"# Patterns\n\n- {BAIT} {LURE}\n".encode()


def plant(home: Path, outside: Path, where: str, shape: str) -> Path:
    """A link at ``where`` in ``home`` to a place in ``outside``; returns that place."""
    link = home / where
    target = outside / f"target-{where.replace('/', '-')}"
    if shape == "file":
        target.write_bytes(bait(link.name))
    elif shape == "folder":  # what a group's folder of episodes or of views would hold
        target.mkdir()
        for name in ("patterns.md", file_name(PLANTED.id)):
            (target / name).write_bytes(bait(name))
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    else:
        link.unlink(missing_ok=True)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return target


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
            for p in sorted(folder.rglob("*"))}


def dualmem(capsys: pytest.CaptureFixture[str], home: Path, layer: str, *argv: str,
            tally: Tally) -> tuple[int, str]:
    """Run one command line; counts a crash (a traceback, a usage error, more than one line of
    error) and a refusal. Returns the exit status and what it printed."""
    code = main(["--home", str(home), "--backend", layer, *argv, "--json"])
    out, err = capsys.readouterr()
    errors = [line for line in err.splitlines() if line.startswith("dualmem: error:")]
    if code not in (0, 1) or "Traceback" in err or (code == 1 and len(errors) != 1):
        tally.crashed += 1
        tally.notes.append(f"{' '.join(argv)}: exit {code}: {err.strip()[-300:]}")
    if code == 1:
        tally.refused += 1
    return code, out


WRITES = [
    ("codebase_discovery", '{"files": ["src/a.py", "src/b.py"]}'),
    ("pattern", "a pattern of the home"),
    ("codebase_discovery", '{"files": ["src/a.py", "src/c.py"]}'),  # retires the fact on b.py
]


def everyday(capsys: pytest.CaptureFixture[str], home: Path, layer: str, overrides: Path,
             tally: Tally) -> tuple[list[str], str]:
    """Writes (one rewrites a discovery: the graph's holder keeps the fact it retired), reads,
    status, seeding with overrides, migration. Returns the ids acknowledged and everything
    printed."""
    acked, printed = [], []
    for kind, body in WRITES:
        code, out = dualmem(capsys, home, layer, "add", "--group", GROUP, "--kind", kind,
                            "--name", kind, "--body", body, "--key", kind, tally=tally)
        if code == 0:
            acked.append(orjson.loads(out)["id"])
    for argv in (["list", "--group", GROUP], ["search", LURE, "--group", GROUP], ["status"],
                 ["seed", "--project-overrides", str(overrides)],
                 ["context", "--task", LURE, "--group", GROUP], ["migrate"]):
        printed.append(dualmem(capsys, home, layer, *argv, tally=tally)[1])
    return acked, "\n".join(printed)


@pytest.mark.parametrize("layer", [*LAYERS, "auto"])
@pytest.mark.parametrize("where", list(PLANTS))
def test_a_link_planted_in_the_home_leads_nowhere_outside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, layer: str
) -> None:
    home, outside = tmp_path / "home", tmp_path / "outside"
    outside.mkdir()
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text("roles:\n  player:\n    must_do_additions: [Run the linters]\n")
    tally = Tally(rounds=1)
    assert main(["--home", str(home), "--backend", layer, "init"]) == 0
    capsys.readouterr()
    target = plant(home, outside, where, PLANTS[where])
    before = snapshot(outside)

    acked, printed = everyday(capsys, home, layer, overrides, tally)

    after = snapshot(outside)
    changed = sorted(name for name in before.keys() | after.keys()
                     if before.get(name, b"gone") != after.get(name, b"gone"))
    tally.escaped += len(changed) + (BAIT in printed)
    tally.notes += [f"outside, changed: {name}" for name in changed]
    if BAIT in printed:
        tally.notes.append(f"served what {target} holds")
    tally.acknowledged = len(acked)
    if (home / where).is_symlink():  # the link gone, what was acknowledged is there
        (home / where).unlink()
    for episode_id in acked:
        if dualmem(capsys, home, layer, "get", episode_id, tally=Tally())[0] != 0:
            tally.lost += 1
            tally.notes.append(f"acknowledged {episode_id}, then not found")
    record("links", layer, tally)
    assert tally.clean, tally.notes


def test_a_view_that_is_a_link_is_reported_and_left_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, outside = tmp_path / "home", tmp_path / "outside"
    outside.mkdir()
    assert main(["--home", str(home), "--backend", "file", "init"]) == 0
    where = f"files/views/{GROUP}/patterns.md"
    target = plant(home, outside, where, "file")
    tally = Tally()
    code, _ = dualmem(capsys, home, "file", "add", "--group", GROUP, "--kind", "pattern",
                      "--name", "n", "--body", "a pattern of the home", tally=tally)
    assert code == 0
    code, out = dualmem(capsys, home, "file", "status", tally=tally)
    assert code == 0 and tally.clean, tally.notes
    problems = "\n".join(str(p) for p in orjson.loads(out)["problems"])
    assert str(home / where) in problems and "symbolic link" in problems
    assert (home / where).is_symlink() and target.read_bytes() == bait("patterns.md")


# -- homes of other users ---------------------------------------------------------------------

STRANGER = 12345
"""a uid no account on the machine has"""
as_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                             reason="needs root (to give a folder to another uid) and setpriv")


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder every user may enter (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="dualmem-owners-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def cli(cwd: Path, *argv: str, uid: int | None = None, stdin: bytes = b"",
        **env: str) -> subprocess.CompletedProcess[bytes]:
    """The command line in a process of its own, in ``cwd``, as ``uid`` (default: this one)."""
    command = [sys.executable, "-m", "memory", *argv]
    if uid is not None:
        command = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *command]
    environ = {k: v for k, v in child_env(**env).items() if k != "DUALMEM_HOME"}
    environ["HOME"] = str(cwd)
    return subprocess.run(command, cwd=cwd, input=stdin, capture_output=True, env=environ,
                          check=False, timeout=300)


def give(folder: Path, uid: int) -> None:
    for path in [folder, *folder.rglob("*")]:
        os.lchown(path, uid, uid)


def one_line(done: subprocess.CompletedProcess[bytes]) -> str:
    err = done.stderr.decode()
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


@as_root
def test_root_refuses_a_home_another_user_planted_above_the_folder(open_folder: Path) -> None:
    planted = open_folder / ".dualmem"
    assert cli(open_folder, "--home", str(planted), "--backend", "file", "init").returncode == 0
    give(planted, STRANGER)
    work = open_folder / "work"
    work.mkdir()
    before = snapshot(planted)
    tally = Tally(rounds=1)

    add = ["--backend", "file", "add", "--kind", "pattern", "--name", "n", "--body", "b"]
    refused = cli(work, *add)
    assert refused.returncode == 1
    message = one_line(refused)
    assert str(planted) in message and "DUALMEM_SAFE_HOMES" in message and "--home" in message
    prompt = orjson.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s",
                           "cwd": str(work), "prompt": "what do we know"})
    hook = cli(work, "--backend", "file", "hook", "prompt", stdin=prompt)
    assert hook.returncode == 0 and "belongs to another user" in one_line(hook)
    tally.refused += 2
    tally.escaped += snapshot(planted) != before
    assert snapshot(planted) == before  # nothing written into it, not even a lock

    # Trusted when listed, or named.
    listed = cli(work, *add, DUALMEM_SAFE_HOMES=f"/elsewhere:{open_folder}")
    named = cli(work, "--home", str(planted), *add)
    assert (listed.returncode, named.returncode) == (0, 0), (listed.stderr, named.stderr)
    tally.acknowledged += 2
    record("owners", "file", tally)


@as_root
def test_a_user_refuses_a_home_root_planted_and_keeps_their_own(open_folder: Path) -> None:
    planted = open_folder / ".dualmem"
    assert cli(open_folder, "--home", str(planted), "--backend", "file", "init").returncode == 0
    work = open_folder / "work"
    work.mkdir()
    give(work, STRANGER)
    before = snapshot(planted)
    tally = Tally(rounds=1)

    add = ["--backend", "file", "add", "--kind", "pattern", "--name", "n", "--body", "b"]
    refused = cli(work, *add, uid=STRANGER)
    assert refused.returncode == 1 and "(uid 0), not to you (uid 12345)" in one_line(refused)
    tally.refused += 1
    # The user's own home, once made, is the nearest one: found, and theirs.
    own = cli(work, "--home", str(work / ".dualmem"), "--backend", "file", "init", uid=STRANGER)
    assert own.returncode == 0, own.stderr
    mine = cli(work, *add, uid=STRANGER)
    assert mine.returncode == 0, mine.stderr
    assert (work / ".dualmem").stat().st_uid == STRANGER
    tally.acknowledged += 1
    tally.escaped += snapshot(planted) != before
    assert snapshot(planted) == before
    record("owners", "file", tally)


def test_overrides_linked_out_of_the_home_are_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, outside = tmp_path / "home", tmp_path / "outside"
    outside.mkdir()
    assert main(["--home", str(home), "--backend", "file", "init"]) == 0
    target = outside / "secret.yaml"
    target.write_text(f"roles: {{player: {{must_do_additions: {BAIT}}}}}\n")
    (home / "entity-overrides.yaml").symlink_to(target)
    capsys.readouterr()
    code = main(["--home", str(home), "--backend", "file", "context", "--task", LURE])
    out, err = capsys.readouterr()
    assert code == 1 and len(err.strip().splitlines()) == 1 and "symbolic link" in err, err
    assert BAIT not in out + err


@as_root
def test_discovery_trusts_only_homes_of_this_user_unless_told(tmp_path: Path) -> None:
    from memory.store.config import Config
    from memory.store.home import ForeignHome

    planted = tmp_path / "shared" / ".dualmem"
    planted.mkdir(parents=True)
    work = planted.parent / "a" / "b"
    work.mkdir(parents=True)
    assert Config.from_env({}, cwd=work).home == planted  # root's own: found
    os.chown(planted, STRANGER, STRANGER)
    with pytest.raises(ForeignHome, match=f"uid {STRANGER}"):
        Config.from_env({}, cwd=work)
    (linked := tmp_path / "linked" / ".dualmem").parent.mkdir()
    linked.symlink_to(planted)  # a link of root's own to another user's folder: theirs
    with pytest.raises(ForeignHome):
        Config.from_env({}, cwd=linked.parent)
    for trusted in (str(planted), str(planted.parent), f"/elsewhere:{planted}/", "*"):
        assert Config.from_env({"DUALMEM_SAFE_HOMES": trusted}, cwd=work).home == planted
    assert Config.from_env({"DUALMEM_SAFE_HOMES": "/elsewhere"}, home=planted).home == planted
    assert Config.from_env({"DUALMEM_HOME": str(planted)}, cwd=work).home == planted


def test_the_project_overview_follows_no_link_out_of_the_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "docs").mkdir(parents=True)
    outside.mkdir()
    home = project / ".dualmem"
    (outside / "secret.md").write_text(f"{BAIT} {LURE}\n")
    (project / "README.md").symlink_to(outside / "secret.md")
    code = main(["--home", str(home), "--backend", "file", "seed"])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1 and "outside" in err, err
    assert main(["--home", str(home), "--backend", "file", "list", "--all-groups",
                 "--json"]) == 0
    assert BAIT not in capsys.readouterr().out
    # A link inside the project is the project's own: read.
    (project / "docs" / "README.md").write_text("# The project\n\nwhat it does\n")
    (project / "README.md").unlink()
    (project / "README.md").symlink_to(project / "docs" / "README.md")
    assert main(["--home", str(home), "--backend", "file", "seed"]) == 0
    capsys.readouterr()
    assert main(["--home", str(home), "--backend", "file", "list", "--kind", "project_overview",
                 "--all-groups", "--json"]) == 0
    assert "what it does" in capsys.readouterr().out


async def test_the_mcp_server_refuses_a_linked_file_in_one_line(tmp_path: Path) -> None:
    from plugin.processes import servers, text_of

    from memory.store.project import ensure_project_id

    home, outside = tmp_path / "app" / ".dualmem", tmp_path / "outside"
    outside.mkdir()
    ensure_project_id(home / "project.json", "app")
    (outside / "secret.yaml").write_text(f"roles: {{coach: {{must_do_additions: [{BAIT}]}}}}\n")
    (home / "entity-overrides.yaml").symlink_to(outside / "secret.yaml")
    async with servers(home, "file", 1) as (client,):
        for tool in ("get_role_constraints", "get_quality_gates"):
            arguments = {"role": "coach"} if tool == "get_role_constraints" else {
                "task_type": "feature", "complexity": 5}
            result = await client.call_tool(tool, arguments)
            text = text_of(result)
            assert result.is_error and text.startswith(f"Error executing tool {tool}: "), text
            assert "symbolic link" in text and "\n" not in text and BAIT not in text, text
