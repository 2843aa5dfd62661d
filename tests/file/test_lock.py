"""The writers' lock: one holder at a time across processes and threads, re-entrant in a thread,
a bounded wait; and a watcher that never queues behind it yet takes in what a person changed
while another process held it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from contract.episodes import make

from backends.errors import WriteFailed
from fallback import FileBackend, disk
from fallback import store as store_module
from fallback.layout import Layout
from fallback.lock import FolderLock
from file.helpers import eventually

REPO = Path(__file__).resolve().parents[2]
_HOLD = """
import sys, time
from pathlib import Path
from fallback.lock import FolderLock
lock = FolderLock(Path(sys.argv[1]), timeout=1.0, poll=0.001)
assert lock.acquire()
print("held", flush=True)
time.sleep(3600)
"""


@contextmanager
def held_elsewhere(path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the lock at ``path`` until the block ends (then killed)."""
    child = subprocess.Popen([sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE,
                             text=True, env={"PYTHONPATH": str(REPO)})
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        yield child
    finally:
        child.kill()
        child.communicate()


def test_one_holder_across_processes_and_the_dead_hold_nothing(tmp_path: Path) -> None:
    lock = FolderLock(tmp_path / ".lock", timeout=0.05, poll=0.001)
    with held_elsewhere(tmp_path / ".lock"):
        assert not lock.acquire(wait=False)
        assert not lock.acquire()  # a bounded wait, then no
        with pytest.raises(WriteFailed, match="was held too long"), disk.held(lock):
            pass
    assert lock.acquire(wait=False)  # the kernel let go with the killed holder
    lock.release()
    lock.close()


def test_the_next_holder_learns_that_the_last_one_died_holding_it(tmp_path: Path) -> None:
    lock = FolderLock(tmp_path / ".lock", timeout=1.0, poll=0.001)
    assert lock.acquire() and not lock.holder_died
    lock.release()
    with held_elsewhere(tmp_path / ".lock"):
        pass  # killed holding it
    assert lock.acquire() and lock.holder_died
    lock.release()  # not recovered: the next holder is told in turn
    assert lock.acquire() and lock.holder_died
    lock.recovered()
    lock.release()
    assert lock.acquire() and not lock.holder_died
    lock.release()
    lock.close()


def test_threads_take_turns_and_a_thread_may_take_it_again(tmp_path: Path) -> None:
    lock = FolderLock(tmp_path / ".lock", timeout=0.05, poll=0.001)
    assert lock.acquire() and lock.acquire(wait=False)  # re-entrant in this thread
    answers: list[bool] = []
    other = threading.Thread(target=lambda: answers.append(lock.acquire(wait=False)))
    other.start()
    other.join()
    assert answers == [False]
    lock.release()
    lock.release()

    def take_and_leave() -> None:
        answers.append(lock.acquire(wait=False))
        lock.release()

    other = threading.Thread(target=take_and_leave)
    other.start()
    other.join()
    assert answers == [False, True]
    lock.close()


async def test_an_edit_made_while_another_process_writes_is_taken_in_after(
    files: FileBackend, home: Path
) -> None:
    await files.upsert(make(1, body="original wording"))
    path = home / "files" / "episodes" / "project_a" / "ep-0001.json"
    document = json.loads(path.read_text())
    document["body"] = "edited by hand while a writer held the lock"
    with held_elsewhere(Layout(home / "files").lock):
        path.write_text(json.dumps(document, indent=2))
        # The watcher put it off rather than wait: reads go on meanwhile.
        assert (await files.get("ep-0001")) == make(1, body="original wording")
    found = await eventually(lambda: files.get("ep-0001"), lambda e: e is not None
                             and e.body.startswith("edited"))
    assert found is not None and found.body == document["body"]


async def test_an_open_kept_waiting_by_another_writer_still_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A busy writer elsewhere is no full disk: the open's catch-up waits for the lock, and
    should the wait run out it is put off, never the process made read-only (every write it
    then tried was refused)."""
    root = tmp_path / "files"
    files = await FileBackend.open(root)
    await files.upsert(make(1))
    await files.aclose()
    folder = Layout(root).group_folder("project_a")
    os.utime(folder, ns=(1, 1))  # a change no process saw: the next open takes it in
    monkeypatch.setattr(store_module, "LOCK_TIMEOUT", 0.2)
    with held_elsewhere(Layout(root).lock):
        files = await FileBackend.open(root, watch=False)
    try:
        await files.upsert(make(2))
        assert [e.id async for e in files.scan()] == ["ep-0001", "ep-0002"]
    finally:
        await files.aclose()


async def test_a_watcher_kept_waiting_past_the_wait_tries_again_and_reports_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A busy lock is not a problem of the file the watcher meant to take in (it was reported
    as one, shown by status, and the edit dropped): the watcher tries again later."""
    monkeypatch.setattr(store_module, "LOCK_TIMEOUT", 0.2)
    monkeypatch.setattr(store_module, "DEFER_LIMIT", 0.0)  # wait for the lock at once
    root = tmp_path / "files"
    files = await FileBackend.open(root)
    refusals: list[bool] = []
    lock_acquire = files._lock.acquire

    def acquire_counting_refusals(*, wait: bool = True) -> bool:
        got = lock_acquire(wait=wait)
        if not got:
            refusals.append(wait)
        return got

    monkeypatch.setattr(files._lock, "acquire", acquire_counting_refusals)
    try:
        await files.upsert(make(1, body="original wording"))
        path = Layout(root).episode_path("project_a", "ep-0001")
        document = json.loads(path.read_text())
        document["body"] = "edited by hand while a writer held the lock"
        with held_elsewhere(Layout(root).lock):
            path.write_text(json.dumps(document, indent=2))
            # the watcher's waits run out meanwhile: it waited the whole timeout, and was refused
            waited_out = await eventually(lambda: refusals, lambda r: True in r, patience=60.0)
            assert True in waited_out
        found = await eventually(lambda: files.get("ep-0001"), lambda e: e is not None
                                 and e.body.startswith("edited"), patience=60.0)
        assert files.problems == []
        assert found is not None and found.body == document["body"]
    finally:
        await files.aclose()
