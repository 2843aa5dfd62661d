"""Opening a ledger that another process is setting up waits for it instead of failing."""

from __future__ import annotations

import sqlite3
import time
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


def test_an_opener_waits_while_another_sets_up_a_new_ledger(tmp_path: Path) -> None:
    # Two processes converting a new ledger to WAL at once: the second failed at once with
    # "database is locked" and its migration found the ledger read-only.
    path = tmp_path / "ledger.sqlite3"
    with ThreadPoolExecutor(1) as pool:
        with flocked(tmp_path):  # as the other opener holds it
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")  # mid-way through its conversion
            opening = pool.submit(open_and_record, path)
            time.sleep(0.3)  # this opener's turn to run: it must wait, not fail
            other.execute("PRAGMA user_version = 1")
            other.execute("COMMIT")
            other.close()
        assert opening.result(timeout=60) == (None, {"ep-1": "hash-1"})
