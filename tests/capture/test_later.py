"""A later Stop is written lean (``memory.capture.later``): a process of its own that imports
neither the command line, the event loop, the store nor the journal's index, and keeps what the
whole way keeps, where every other process, the index's next open and the graph take it in."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from file.helpers import eventually

from backends.kinds import GOTCHA
from backends.model import Episode
from capture.conftest import Project, open_project
from capture.shapes import T0, Transcript
from memory.capture.derive import SOURCE
from memory.store.dual import DualBackend
from memory.store.selection import open_memory

LEAN_OUT = ("asyncio", "argparse", "sqlite3", "memory.cli", "memory.hooks", "memory.store.dual",
            "memory.store.selection", "fallback.store", "fallback.index", "fallback.intake",
            "backends.search", "backends.protocol", "subprocess", "shlex", "rapidfuzz",
            "graphiti_core", "kuzu", "pydantic", "numpy", "orjson", "dataclasses", "inspect",
            "uuid", "platform", "hashlib", "_hashlib", "threading", "typing", "compile()",
            "backends.graph.kuzu", "memory.store.settings", "contextlib", "importlib",
            "pathlib", "urllib.parse", "ipaddress", "gc on")
"""what a lean Stop never imports (a package with its modules): ``subprocess`` not even in a
git repository (``backends.child_output`` asks git), ``shlex`` only for a command of no known
check; orjson (with dataclasses and uuid), hashlib (with OpenSSL), threading, typing
(``backends.lean_typing``) cost it more than its work, as contextlib, importlib, pathlib (with
urllib.parse and ipaddress: its paths are text), the graph's engines and a home's settings
(``memory.store.config`` loads them when a config names them); ``compile()``, ``gc on``: see
``stop``"""
NOTHING_NEW_OUT = (*LEAN_OUT, "memory.capture.later")
"""what a Stop with nothing new never imports"""


def session(cwd: str) -> Transcript:
    t = Transcript(cwd)
    t.prompt("Route the note store's writes through the journal")
    t.read("src/notes/store.py", "def save(note):\n    return disk.write(note)\n")
    t.say("`store.py` writes each note straight to disk, around the journal.")
    t.edit("src/notes/store.py", "disk.write", "journal.write",
           said="Let me route the store's writes through the journal.")
    t.bash("python -m pytest -q", "12 passed in 0.3s")
    return t


def one_turn_more(t: Transcript) -> None:
    t.prompt("Now the index too")
    t.read("src/notes/index.py", "def add(note):\n    rows.append(note)\n")
    t.say("`index.py` keeps the rows in memory; it must read them back from the journal.")
    t.edit("src/notes/index.py", "rows.append", "journal.append",
           said="Let me make the index append to the journal.")
    t.bash("python -m pytest -q", "13 passed in 0.3s")


def a_failure(t: Transcript) -> None:
    t.bash("python -m pytest -q", "E   KeyError: 'note 7'\nFAILED tests/test_notes.py::"
           "test_note - KeyError\n1 failed, 12 passed in 0.3s", code=1)


def a_fix(t: Transcript) -> None:
    """A turn that fixes the failure the turn before met: its Stop keeps a gotcha."""
    t.prompt("Fix the failing test")
    t.edit("src/notes/store.py", "journal.write(note)", "journal.write(str(note))",
           said="Note ids are text in the journal.")
    t.bash("python -m pytest -q", "13 passed in 0.3s")


def stop(project: Project, transcript: Path) -> tuple[str, set[str]]:
    """``dualmem hook stop`` in a process of its own: what it printed, and every module it had
    imported by its end, with ``compile()`` among them when anything but an import called it
    (a process's first ``compile()`` sets up the syntax tree's types, ~10M instructions: a
    ``NamedTuple`` field or a ``TypeVar`` bound named in a string calls it), and ``gc on`` when
    the garbage collector was on at its end (``memory.entry``)."""
    probe = ("import builtins, sys\nsys.argv = ['dualmem', 'hook', 'stop']\n"
             "compiled = builtins.compile\n"
             "def counted(*args, **kwargs):\n"
             "    if 'importlib' not in sys._getframe(1).f_code.co_filename:\n"
             "        sys.modules['compile()'] = sys\n"
             "    return compiled(*args, **kwargs)\n"
             "builtins.compile = counted\n"
             # as the console script runs it (runpy, python -m's, imports contextlib)
             "try:\n    from memory.entry import main\n    main()\n"
             "except SystemExit:\n    pass\n"
             "import gc\n"
             "print(sorted([*sys.modules, *['gc on'][:gc.isenabled()]]), file=sys.stderr)")
    given = orjson.dumps({"session_id": "s", "transcript_path": str(transcript),
                          "cwd": str(project.folder), "hook_event_name": "Stop"})
    done = subprocess.run([sys.executable, "-c", probe], input=given, capture_output=True,
                          cwd=project.folder, timeout=120, check=True)
    return done.stdout.decode().strip(), set(eval(done.stderr.decode().strip().splitlines()[-1]))


def search(project: Project, query: str) -> list[dict[str, Any]]:
    """``dualmem search`` in a process of its own: its hits."""
    found = subprocess.run([sys.executable, "-m", "memory", "--home", str(project.home),
                            "--backend", "file", "search", query, "--json"],
                           capture_output=True, cwd=project.folder, timeout=120, check=True)
    hits: list[dict[str, Any]] = orjson.loads(found.stdout)["hits"]
    return hits


def imported(modules: set[str], among: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules for p in among if m == p or m.startswith(p + "."))


def shown(episodes: list[Episode]) -> list[tuple[str, str, str, str, str]]:
    """What two captures must agree on (``valid_at`` is when each wrote)."""
    return sorted((e.id, e.kind, e.name, e.body, e.source) for e in episodes)


@pytest.mark.parametrize("ending", [one_turn_more, a_fix])
async def test_a_later_stop_is_written_lean_and_keeps_what_the_whole_way_keeps(
        tmp_path: Path, ending: Callable[[Transcript], None]) -> None:
    # Two homes of one project id with the same session: one Stop after another goes the
    # whole way in one (in-process), the lean way in the other (its own process).
    async with AsyncExitStack() as opened:
        lean, whole = [await opened.enter_async_context(asynccontextmanager(open_project)(
            tmp_path / side / "notes", "notes-0001")) for side in ("lean", "whole")]
        for project in (lean, whole):
            t = session(str(project.folder))
            if ending is a_fix:
                a_failure(t)
            path = t.save(project.folder / "s.jsonl")
            await project.capture(path)
            ending(t)
            t.save(path)
        said, modules = stop(lean, lean.folder / "s.jsonl")
        report = await whole.capture(whole.folder / "s.jsonl")

        assert imported(modules, LEAN_OUT) == []
        assert {"memory.capture.later", "fallback.append"} <= modules
        assert orjson.loads(said) == {"systemMessage": f"dualmem kept {report.kept.describe()}"}
        nothing, quiet = stop(lean, lean.folder / "s.jsonl")  # the next Stop: nothing new
        assert nothing == "{}" and imported(quiet, NOTHING_NEW_OUT) == []
        assert report.kept.kinds  # the turn changed memories, which both wrote
        async with open_memory(lean.home, "file") as reopened:
            lean_memories = [e async for e in reopened.scan(group_ids=[lean.id])]
        assert shown(lean_memories) == shown(await whole.memories())
        assert page(lean) == page(whole)  # rendered by the next open's catch-up
        assert any("KeyError" in bullet for bullet in page(whole)) == (ending is a_fix)


async def test_a_later_stop_in_a_git_repository_keeps_its_commits_and_stays_lean(
        tmp_path: Path) -> None:
    # As the test above, in a git repository with a commit made during the session: the lean
    # Stop asks git without importing subprocess, and keeps the commit as the whole way does.
    async with AsyncExitStack() as opened:
        lean, whole = [await opened.enter_async_context(asynccontextmanager(open_project)(
            tmp_path / side / "notes", "notes-0001")) for side in ("lean", "whole")]
        for project in (lean, whole):
            t = session(str(project.folder))
            path = t.save(project.folder / "s.jsonl")
            await project.capture(path)
            a_commit(project.folder, "notes: route writes through the journal")
            one_turn_more(t)
            t.save(path)
        said, modules = stop(lean, lean.folder / "s.jsonl")
        report = await whole.capture(whole.folder / "s.jsonl")

        assert imported(modules, LEAN_OUT) == [] and "memory.capture.later" in modules
        assert orjson.loads(said) == {"systemMessage": f"dualmem kept {report.kept.describe()}"}
        async with open_memory(lean.home, "file") as reopened:
            lean_memories = [e async for e in reopened.scan(group_ids=[lean.id])]
        assert shown(lean_memories) == shown(await whole.memories())
        assert sum("commit: notes: route writes through the journal" in e.body
                   for e in lean_memories) == 1  # the session's insight


def a_commit(folder: Path, subject: str) -> None:
    """``folder`` a git repository with one commit, dated inside the session (``shapes.T0``):
    the same commit (hash too) in every folder."""
    when = (T0 + timedelta(seconds=25)).isoformat()
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when,
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull}
    (folder / "journal.py").write_text("def write(note):\n    pass\n")
    for argv in (["init", "-q"], ["add", "journal.py"], ["commit", "-qm", subject]):
        subprocess.run(["git", *argv], cwd=folder, env=env, check=True, capture_output=True,
                       timeout=60)


def page(project: Project) -> list[str]:
    """The bullets of the project's gotchas.md and its later pages (none before a gotcha): a
    gotcha starts a later page when its id's digest says so (``fallback.views.starts_page``, one
    in 128), and the fixture's project id, of which the gotcha's id is made, is random."""
    return sorted(line for view in (project.home / "files" / "views").glob("*/gotchas*.md")
                  for line in view.read_text().splitlines() if line.startswith("- "))


async def lean_stop(project: Project, path: Path, ending: Callable[[Transcript], None], *,
                    watched: bool) -> str:
    """The session captured, then ``ending`` appended and its Stop written lean in a process of
    its own (the project's store left open and watching, or closed): what the Stop said."""
    t = session(str(project.folder))
    if ending is a_fix:
        a_failure(t)
    t.save(path)
    await project.capture(path)
    if not watched:
        await project.store.aclose()  # the next open, or next process, is what takes it in
    ending(t)
    t.save(path)
    said, modules = stop(project, path)
    assert "memory.capture.later" in modules and "memory.cli" not in modules
    return said


async def test_a_stop_that_goes_the_whole_way_has_the_garbage_collector_on(
        project: Project, tmp_path: Path) -> None:
    # A first Stop reads the transcript from its start: the command line's way, as a server's.
    said, modules = stop(project, session(str(project.folder)).save(tmp_path / "s.jsonl"))
    assert "memory.cli" in modules and "gc on" in modules
    assert "file discover" in said


async def test_what_a_lean_stop_wrote_is_found_by_the_next_process_and_replayed_into_the_graph(
        project: Project, tmp_path: Path) -> None:
    said = await lean_stop(project, tmp_path / "s.jsonl", one_turn_more, watched=False)
    assert "file discover" in said

    async with open_memory(project.home, "auto") as holder:
        assert isinstance(holder, DualBackend)
        await holder.catch_up()
        assert holder.layer_in_use == "graph"
        [hit] = [h for h in await holder.search("index.py journal rows", limit=10)
                 if h.episode.data.get("file") == "src/notes/index.py"]
        assert hit.layer == "graph" and hit.episode.source == SOURCE
        assert "reads them back from the journal" in hit.episode.body or (
            "rows in memory" in hit.episode.body)


async def test_a_gotcha_a_lean_stop_kept_is_found_at_once_by_a_watching_store_and_shown(
        project: Project, tmp_path: Path) -> None:
    # The project's store stays open and watching, as an MCP server's does.
    assert "gotcha" in await lean_stop(project, tmp_path / "s.jsonl", a_fix, watched=True)
    hits = await eventually(lambda: project.store.search("KeyError note", limit=5),
                            lambda hits: any(h.episode.kind == GOTCHA for h in hits))
    assert any(h.episode.kind == GOTCHA and "KeyError" in h.episode.body for h in hits)
    shown = await eventually(lambda: page(project), lambda bullets: bool(bullets))
    assert any("KeyError" in bullet for bullet in shown)


async def test_a_gotcha_a_lean_stop_kept_is_found_by_the_next_search_process_and_shown(
        project: Project, tmp_path: Path) -> None:
    assert "gotcha" in await lean_stop(project, tmp_path / "s.jsonl", a_fix, watched=False)
    hits = search(project, "KeyError note")
    assert any(hit["episode"]["kind"] == GOTCHA for hit in hits), hits
    assert any("KeyError" in bullet for bullet in page(project))
