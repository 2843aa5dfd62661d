"""Opening a ledger that another process is setting up waits for it instead of failing."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from backends.flock import flocked
from migrate import Ledger

STREAM = "files->graph"


def open_and_record(path: Path) -> tuple[str | None, dict[str, str]]:
    ledger = Ledger.open(path)  # a ledger is used by the thread that opened it
    try:
        ledger.record(STREAM, [("ep-1", "g", "hash-1")])
        return ledger.read_only, ledger.replayed(STREAM)
    finally:
        ledger.close()


def blocked_on_flock(folder: Path) -> bool:
    """True once some process or thread waits for ``folder``'s flock (a ``->`` row of
    /proc/locks names what it waits for by device and inode)."""
    status = os.stat(folder)
    inode = f":{status.st_ino} "
    with open("/proc/locks") as locks:
        return any("-> FLOCK" in row and inode in row for row in locks)


def wait_until(check: Callable[[], bool], patience: float = 60.0) -> bool:
    """Poll ``check`` until it holds; False when patience runs out (a bound, not a timing)."""
    deadline = time.monotonic() + patience
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_an_opener_waits_while_another_sets_up_a_new_ledger(tmp_path: Path) -> None:
    # Two processes converting a new ledger to WAL at once: the second failed at once with
    # "database is locked" and its migration found the ledger read-only.
    path = tmp_path / "ledger.sqlite3"
    with ThreadPoolExecutor(1) as pool:
        with flocked(tmp_path):  # as the other opener holds it
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")  # mid-way through its conversion
            opening = pool.submit(open_and_record, path)
            assert wait_until(lambda: blocked_on_flock(tmp_path))  # it waits, and did not fail
            assert not opening.done()
            other.execute("PRAGMA user_version = 1")
            other.execute("COMMIT")
            other.close()
        assert opening.result(timeout=60) == (None, {"ep-1": "hash-1"})
