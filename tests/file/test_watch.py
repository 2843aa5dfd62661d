"""Changes made underneath a running file layer (another process, an editor) reach its index
within a second; we poll up to two."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from contract.episodes import make

from fallback import FileBackend
from file.helpers import WATCH_PATIENCE, eventually

LISTENER = Path(__file__).with_name("burst_listener.py")


@pytest.fixture
async def other(home: Path, files: FileBackend) -> AsyncIterator[FileBackend]:
    """A second writer on the same folder, as another process would be."""
    backend = await FileBackend.open(home / "files")
    yield backend
    await backend.aclose()


async def ids(backend: FileBackend, query: str) -> list[str]:
    return [hit.episode.id for hit in await backend.search(query)]


async def test_another_writers_episodes_are_found(files: FileBackend, other: FileBackend) -> None:
    await other.upsert(make(1, group_id="new_group", body="zeppelin hangar layout"))
    assert await eventually(lambda: ids(files, "zepelin"), bool) == ["ep-0001"]
    found = await files.get("ep-0001")
    assert found == make(1, group_id="new_group", body="zeppelin hangar layout")
    await other.upsert(make(1, group_id="new_group", body="airship dock layout"))
    assert await eventually(lambda: ids(files, "airship"), bool) == ["ep-0001"]
    assert await ids(files, "zeppelin") == []
    await other.delete("ep-0001")
    assert await eventually(lambda: files.count(), lambda n: n == 0) == 0


async def test_an_episode_edited_in_place_is_searchable(files: FileBackend, home: Path) -> None:
    await files.upsert(make(1, body="original wording"))
    path = home / "files" / "episodes" / "project_a" / "ep-0001.json"
    document = json.loads(path.read_text())
    document["body"] = "edited by hand in an editor"
    path.write_text(json.dumps(document, indent=2))
    assert await eventually(lambda: ids(files, "editor"), bool) == ["ep-0001"]
    assert await ids(files, "original") == []


async def test_an_episode_file_removed_by_hand_is_forgotten(files: FileBackend, home: Path) -> None:
    await files.upsert(make(1))
    await files.upsert(make(2))
    (home / "files" / "episodes" / "project_a" / "ep-0001.json").unlink()
    assert await eventually(lambda: files.count(), lambda n: n == 1) == 1
    assert await files.get("ep-0001") is None


async def test_a_repaired_file_is_taken_in_and_no_longer_reported(
    files: FileBackend, home: Path
) -> None:
    await files.upsert(make(1, body="repaired later"))
    path = home / "files" / "episodes" / "project_a" / "ep-0001.json"
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])
    assert await eventually(lambda: files.count(), lambda n: n == 0) == 0
    assert [p for p, _ in files.problems] == [path]
    path.write_bytes(good)
    assert await eventually(lambda: ids(files, "repaired"), bool) == ["ep-0001"]
    assert files.problems == []


async def test_views_written_into_new_folders_at_once_are_taken_in(
    files: FileBackend, home: Path
) -> None:
    """The watch on a new folder begins only once the watcher hears of it: a view written in
    it before then is looked at all the same."""
    groups = [f"fresh_{n}" for n in range(20)]
    for group in groups:
        view = home / "files" / "views" / group / "patterns.md"
        view.parent.mkdir(parents=True)
        view.write_text(f"# Patterns\n\n- Bullet of {group} written at once\n")
    found = await eventually(lambda: files.count(), lambda n: n == len(groups))
    assert found == len(groups)
    hits = await files.search("bullet written at once", limit=len(groups))
    assert sorted(hit.episode.group_id for hit in hits) == sorted(groups)


def test_folders_made_at_once_leave_the_watcher_hearing(tmp_path: Path) -> None:
    """A folder made just as its parent is first watched is watched twice, and watchdog warns
    of it from its inotify thread: under ``-W error`` that ended the thread, and a bullet
    typed after it was never taken in. Run as a process of its own, as a user's would."""
    tests = os.pathsep.join([str(LISTENER.parents[1]), os.environ.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-W", "error", str(LISTENER), str(tmp_path)],
                          capture_output=True, text=True, timeout=WATCH_PATIENCE + 60,
                          env=os.environ | {"PYTHONPATH": tests})
    assert (done.returncode, done.stderr) == (0, "")
