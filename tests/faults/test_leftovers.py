"""What killed processes leave behind never stands in the way: temp files of writers that died
before their rename are removed by the next process that writes or watches (never those of a
live writer), and a lock held by a process that died is free (the kernel releases flock and
Kùzu's lock)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from backends.errors import BackendUnavailable
from backends.graph import GraphBackend
from backends.model import Episode
from fallback import FileBackend, disk
from fallback.layout import Layout
from fallback.lock import FolderLock
from faults.children import child_env, script
from faults.holder import KILLED


@contextmanager
def holding(what: str, path: Path) -> Iterator[subprocess.Popen[str]]:
    """A child process holding ``what`` (see holder.py) until the block ends; then it is gone."""
    child = subprocess.Popen(script("holder.py", what, str(path)), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=child_env())
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "held", child.stderr and child.stderr.read()
        yield child
    finally:
        child.kill()
        child.communicate()


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def temp_name(target: str, pid: int) -> str:
    return f".{target}.{pid}.0123abcd.tmp"


def note(number: int) -> Episode:
    return Episode.parse(id=f"ep-{number}", group_id="g", kind="pattern", name=f"note {number}",
                         body=f"note {number}", created_at=datetime(2025, 1, 1, tzinfo=UTC))


async def test_temp_files_of_dead_writers_go_at_open_and_a_live_writers_stay(
    tmp_path: Path,
) -> None:
    root = tmp_path / "files"
    files = await FileBackend.open(root)
    await files.upsert(note(1))
    await files.bury(["ep-gone"])
    await files.aclose()
    layout = Layout(root)
    episode = layout.episode_path("g", "ep-1")
    # A writer killed between its temp file and its rename, for real:
    with holding("temp", episode) as killed:
        pass
    left = [p.name for p in episode.parent.iterdir() if p.name.startswith(".")]
    assert len(left) == 1 and left[0].startswith(f".{episode.name}.{killed.pid}.")
    # ... and planted ones of dead processes, in every folder the layer writes:
    dead = dead_pid()
    planted = [
        episode.parent / temp_name("ep-2.json", dead),
        layout.view_path("g", "pattern").parent / temp_name("patterns.md", dead),
        root / "tombstones" / temp_name("ep-gone.json", dead),
    ]
    live = episode.parent / temp_name("ep-3.json", os.getpid())
    for path in [*planted, live]:
        path.write_bytes(b"{}")

    reopened = await FileBackend.open(root)
    try:
        remaining = sorted(p.name for p in root.rglob("*.tmp"))
        assert remaining == [live.name]
        assert [e.id async for e in reopened.scan()] == ["ep-1"]
        assert (await reopened.get("ep-1")) == note(1)
    finally:
        await reopened.aclose()


async def test_a_one_shot_read_leaves_them_to_the_next_writer(tmp_path: Path) -> None:
    # Scanning every group folder is a hook's or a search's to skip; a write sweeps first.
    root = tmp_path / "files"
    files = await FileBackend.open(root)
    await files.upsert(note(1))
    await files.aclose()
    leftover = Layout(root).episode_path("g", "ep-1").parent / temp_name("ep-2.json", dead_pid())

    reader = await FileBackend.open(root, watch=False)
    try:
        leftover.write_bytes(b"{}")
        assert [hit.episode.id for hit in await reader.search("note")] == ["ep-1"]
        assert leftover.exists()
    finally:
        await reader.aclose()
    writer = await FileBackend.open(root, watch=False)
    try:
        await writer.upsert(note(3))
        assert not leftover.exists()
    finally:
        await writer.aclose()


async def test_the_file_lock_of_a_killed_process_does_not_block(tmp_path: Path) -> None:
    root = tmp_path / "files"
    files = await FileBackend.open(root)
    try:
        with holding("lock", root) as holder:
            # It really holds the lock:
            assert not FolderLock(Layout(root).lock, timeout=0, poll=0).acquire(wait=False)
            holder.send_signal(signal.SIGKILL)
            holder.wait()
            assert (await files.upsert(note(1))).layer == "file"
        assert Layout(root).lock.exists()  # the file stays; the lock on it went with its holder
        assert await files.get("ep-1") == note(1)
    finally:
        await files.aclose()


async def test_the_graph_lock_of_a_killed_process_does_not_block(tmp_path: Path) -> None:
    with holding("graph", tmp_path / "graph") as holder:
        with pytest.raises(BackendUnavailable, match="locked by another process"):
            await GraphBackend.open(tmp_path / "graph")
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        graph = await GraphBackend.open(tmp_path / "graph")
    try:
        assert (await graph.upsert(note(1))).layer == "graph"
    finally:
        await graph.aclose()


async def test_copy_files_of_a_killed_graph_writer_go_when_the_graph_is_next_opened(
    tmp_path: Path,
) -> None:
    graph = await GraphBackend.open(tmp_path / "graph")
    await graph.aclose()
    planted = tmp_path / "graph" / ".bulk-k1ll3d.csv"  # Kùzu's lock: no other writer has one
    planted.write_text('"half","a","row"\n')
    graph = await GraphBackend.open(tmp_path / "graph")
    try:
        assert not planted.exists()
        assert await graph.count() == 0
    finally:
        await graph.aclose()


async def test_the_old_copy_of_a_moved_episode_left_by_a_kill_does_not_come_back(
    tmp_path: Path,
) -> None:
    """Found by the kill -9 family (seed 1731822869, round 21): a writer killed after moving an
    episode to another group, between the index's commit and the removal of the old copy, left
    that copy; once the episode was deleted, the copy came back at the next open."""
    root = tmp_path / "files"
    old = note(1)
    moved = old.model_copy(update={"group_id": "h", "body": "moved"})
    files = await FileBackend.open(root, watch=False)
    await files.upsert(old)
    await files.aclose()
    left = Layout(root).episode_path("g", old.id)
    kept, written = left.read_bytes(), left.stat()
    files = await FileBackend.open(root, watch=False)
    await files.upsert(moved)
    await files.aclose()
    left.write_bytes(kept)  # where the killed writer left it, as it was
    os.utime(left, ns=(written.st_atime_ns, written.st_mtime_ns))

    files = await FileBackend.open(root, watch=False)
    try:
        assert await files.get(old.id) == moved
        assert await files.delete(old.id)
    finally:
        await files.aclose()
    reopened = await FileBackend.open(root, watch=False)
    try:
        assert await reopened.get(old.id) is None
        assert [e async for e in reopened.scan()] == []
    finally:
        await reopened.aclose()


async def test_a_file_renamed_by_a_writer_killed_before_its_index_committed_is_read_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A writer killed between its rename and its index's commit leaves a file no index has
    read (never acknowledged). A process open since before then, writing in that folder on a
    slow disk (its rename older than the racy window when it records the folder), recorded the
    folder as agreeing with the index: no open read that file again, while a rebuild of the
    index showed it. Now the next holder of the lock learns that its last holder died holding
    it, and the next open reads every folder again."""
    root = tmp_path / "files"
    other = await FileBackend.open(root, watch=False)
    try:
        await other.upsert(note(1))
        with holding("renamed", root):
            pass  # killed (SIGKILL) where it stood, holding the lock
        assert Layout(root).episode_path("g", KILLED.id).exists()
        real_sync = disk.sync_folder

        def slow_sync(folder: Path) -> None:  # a slow disk: only the delay is added
            time.sleep(0.1)
            real_sync(folder)

        monkeypatch.setattr(disk, "sync_folder", slow_sync)
        await other.upsert(note(2))
        monkeypatch.undo()
    finally:
        await other.aclose()

    reopened = await FileBackend.open(root, watch=False)
    try:
        assert await reopened.get(KILLED.id) == KILLED
        read = sorted([e.id async for e in reopened.scan()])
        assert read == sorted(["ep-1", "ep-2", KILLED.id]) and await reopened.count() == 3
    finally:
        await reopened.aclose()
    (root / "index.sqlite3").unlink()  # a rebuild of the index tells the same story
    rebuilt = await FileBackend.open(root, watch=False)
    try:
        assert sorted([e.id async for e in rebuilt.scan()]) == read
    finally:
        await rebuilt.aclose()


async def test_a_move_cut_short_by_a_kill_tells_one_story_read_or_rebuilt(
    tmp_path: Path,
) -> None:
    """A writer killed after renaming a moved memory's new file into place, before its index
    committed, leaves a copy in each group. The next open kept the old one (the index's) while
    a rebuild took whichever group it read first: the new one, when its group sorts first. The
    copy written later stands either way, and the other is a reported problem."""
    root = tmp_path / "files"
    before = KILLED.model_copy(update={"group_id": "m", "body": "before the move"})
    files = await FileBackend.open(root, watch=False)
    try:
        await files.upsert(before)
    finally:
        await files.aclose()
    with holding("renamed", root):
        pass  # killed having renamed the moved copy into g, before its index committed
    old_copy = Layout(root).episode_path("m", KILLED.id)

    for _ in ("caught up", "rebuilt"):
        opened = await FileBackend.open(root, watch=False)
        try:
            assert await opened.get(KILLED.id) == KILLED
            assert [e.id async for e in opened.scan()] == [KILLED.id]
            assert [path for path, _ in opened.problems] == [old_copy]
        finally:
            await opened.aclose()
        (root / "index.sqlite3").unlink()
