"""Git and editor workflows on the views (``patterns.md``, ``gotchas.md``): what a person typed
is never lost, whatever happens to the file while an agent writes.

Editor saves (a temp file renamed onto the view) race a stream of renders in another process;
git checks out, stashes and pops views; views are truncated. Each round counts the person's
bullets saved and those found neither in the view nor among the memories (lost)."""

from __future__ import annotations

import asyncio
import os
import random
import time
from pathlib import Path

from backends.model import natural_key, stable_id
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
        text = view.read_text()
        lost = [number for number in range(SAVES)
                if await files.get(stable_id(GROUP, "pattern", natural_key(note(number)))) is None
                or f"- {note(number)}\n" not in text]
    finally:
        await files.aclose()
    record("views", "file", Tally(rounds=1, acknowledged=SAVES, lost=len(lost)))
    assert wrote.startswith(b"wrote ")
    assert lost == [], f"{len(lost)} of {SAVES} saved bullets lost: {lost[:10]}"
