"""Git and editor workflows on the views (``patterns.md``, ``gotchas.md``): what a person typed
is never lost, whatever happens to the file while an agent writes.

Editor saves (a temp file renamed onto the view) race a stream of renders in another process;
git checks out, stashes and pops views; views are truncated. Each round counts the person's
bullets saved and those found neither in the view nor among the memories (lost)."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from file.helpers import eventually

from backends.model import Episode, natural_key, stable_id
from fallback import FileBackend
from faults.children import child_env, script, sigkill
from faults.harness import ITERATIONS, record
from faults.workload import Tally

GROUP = "views-race"
SAVES = 150 * ITERATIONS
"""editor saves per race: the issue's figure was 6 of 1,408 lost"""
RACE_PATIENCE = 600.0
"""a bound on one race, so that a hung agent fails the test instead of hanging the suite"""


def note(number: int) -> str:
    return f"person note {number} typed while the agent writes"


async def editor_saves(view: Path, saves: int, rng: random.Random) -> None:
    """Save the view ``saves`` times as an editor does (read, add a bullet, write a temp file,
    rename it onto the view), each save keeping what the file held when it read it."""
    deadline = time.monotonic() + RACE_PATIENCE
    for number in range(saves):
        assert time.monotonic() < deadline, "the race took too long"
        save(view, f"- {note(number)}")
        await asyncio.sleep(rng.random() / 500)


def save(view: Path, line: str) -> None:
    """One save as an editor makes it: the file as read, plus ``line``, renamed into place."""
    temp = view.with_name(f".{view.name}.swp")
    temp.write_text(f"{view.read_text().rstrip()}\n{line}\n")
    os.replace(temp, view)


async def test_an_editors_saves_race_a_stream_of_renders_and_lose_nothing(tmp_path: Path) -> None:
    home = tmp_path / "files"
    rng = random.Random(27)
    agent = await asyncio.create_subprocess_exec(
        *script("view_agent.py", str(home), GROUP), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, env=child_env(), start_new_session=True)
    assert agent.stdin is not None and agent.stdout is not None
    try:
        async with asyncio.timeout(RACE_PATIENCE):
            assert await agent.stdout.readline() == b"ready\n"
            view = home / "views" / GROUP / "patterns.md"
            await editor_saves(view, SAVES, rng)
            agent.stdin.close()
            wrote = await agent.stdout.readline()
            assert await agent.wait() == 0
    finally:
        sigkill(agent)
    files = await FileBackend.open(home, watch=False)
    try:
        text = _text(view)
        stored = [await files.get(stable_id(GROUP, "pattern", natural_key(note(number))))
                  is not None for number in range(SAVES)]
        held = {item.episode.body for item in files.set_aside() if item.held}
    finally:
        await files.aclose()
    shown = [f"- {note(number)}\n" in text for number in range(SAVES)]
    lost = [n for n in range(SAVES) if not (stored[n] or shown[n])]
    hidden = [n for n in range(SAVES) if stored[n] and not shown[n] and note(n) not in held]
    record("views", "file", Tally(rounds=1, acknowledged=SAVES, lost=len(lost) + len(hidden),
                                  notes=[f"race: {len(held)} of {SAVES} held"] if held else []))
    assert wrote.startswith(b"wrote ")
    assert lost == [], f"{len(lost)} of {SAVES} saved bullets lost: {lost[:10]}"
    # Stored but shown nowhere and not reported: as good as lost to the person.
    assert hidden == [], f"{len(hidden)} of {SAVES} saved bullets hidden: {hidden[:10]}"
    # An editor that read the view in the instant a render showed may drop a bullet from its
    # next save: that bullet is held (stored, and listed by status), never lost. How many such
    # instants a race meets depends on the machine's load (5 of 300 were held under a load of 4.5;
    # the figure is recorded above): the bound only says holding stays the exception.
    assert len(held) <= SAVES // 10, f"{len(held)} of {SAVES} held"


def git(repo: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv],
                          cwd=repo, capture_output=True, text=True, timeout=120)


async def a_person_types(files: FileBackend, view: Path, texts: list[str]) -> None:
    with view.open("a") as markdown:
        markdown.writelines(f"- {text}\n" for text in texts)
    ids = [stable_id(GROUP, "pattern", natural_key(text)) for text in texts]
    assert await eventually(lambda: _all_stored(files, ids), bool)


async def _all_stored(files: FileBackend, ids: list[str]) -> bool:
    return all([await files.get(i) is not None for i in ids])


async def _lost(files: FileBackend, view: Path, texts: list[str]) -> list[str]:
    """The texts found neither in the view, nor among the memories, nor set aside."""
    shown = _text(view)
    stored = {e.body async for e in files.scan()}
    kept = {item.episode.body for item in files.set_aside()}
    return [t for t in texts if f"- {t}\n" not in shown and t not in stored and t not in kept]


def _text(view: Path) -> str:
    return view.read_text() if view.exists() else ""


@pytest.fixture
async def repo(tmp_path: Path) -> AsyncIterator[tuple[Path, FileBackend, Path]]:
    """A git repository holding a home whose view is committed, watched by a file layer."""
    assert git(tmp_path, "init", "-q").returncode == 0
    files = await FileBackend.open(tmp_path / ".dualmem" / "files")
    await files.upsert(Episode.create(group_id=GROUP, kind="pattern", name="generated",
                                      body="written by the agent", source="agent"))
    view = tmp_path / ".dualmem" / "files" / "views" / GROUP / "patterns.md"
    assert git(tmp_path, "add", str(view)).returncode == 0
    assert git(tmp_path, "commit", "-qm", "the view").returncode == 0
    try:
        yield tmp_path, files, view
    finally:
        await files.aclose()


@pytest.mark.parametrize("typed", [1, 3])
async def test_git_stash_then_pop_keeps_every_bullet(
        repo: tuple[Path, FileBackend, Path], typed: int) -> None:
    folder, files, view = repo
    texts = [f"typed since the commit {n}" for n in range(typed)]
    await a_person_types(files, view, texts)
    assert git(folder, "stash").returncode == 0
    # Taken in (held, or one forgotten with its text) without rewriting the view: pop applies.
    assert await eventually(lambda: len(files.set_aside()), lambda n: n == typed) == typed
    assert git(folder, "status", "--porcelain", str(view)).stdout == ""
    lost = await _lost(files, view, texts)
    popped = git(folder, "stash", "pop")
    assert popped.returncode == 0, popped.stderr
    assert await eventually(lambda: files.set_aside(), lambda now: now == []) == []
    lost += await _lost(files, view, texts)
    assert await _all_stored(files, [stable_id(GROUP, "pattern", natural_key(t)) for t in texts])
    record("views", "file", Tally(rounds=1, acknowledged=typed, lost=len(lost)))
    assert lost == []


async def test_git_checkout_of_the_committed_view_forgets_nothing(
        repo: tuple[Path, FileBackend, Path]) -> None:
    folder, files, view = repo
    texts = [f"typed since the commit {n}" for n in range(4)]
    await a_person_types(files, view, texts)
    count = await files.count()
    assert git(folder, "checkout", "--", str(view)).returncode == 0
    assert await eventually(lambda: len(files.set_aside()), lambda n: n == 4) == 4
    assert all(item.held for item in files.set_aside())
    assert await files.count() == count
    lost = await _lost(files, view, texts)
    record("views", "file", Tally(rounds=1, acknowledged=len(texts), lost=len(lost)))
    assert lost == []


async def test_a_truncated_view_forgets_nothing_and_is_written_again(
        repo: tuple[Path, FileBackend, Path]) -> None:
    _, files, view = repo
    texts = [f"typed before the truncation {n}" for n in range(3)]
    await a_person_types(files, view, texts)
    count = await files.count()
    with view.open("w"):  # `: > patterns.md`
        pass
    shown = await eventually(view.read_text, lambda now: all(f"- {t}\n" in now for t in texts))
    assert await files.count() == count and files.set_aside() == []
    lost = [t for t in texts if f"- {t}\n" not in shown]
    record("views", "file", Tally(rounds=1, acknowledged=len(texts), lost=len(lost)))
    assert lost == []
