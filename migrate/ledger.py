"""What has been replayed where: one row per episode per stream, the content hash it had.

sqlite3 (stdlib) rather than an append-only JSONL file: a batch's rows commit in one
transaction, so a run killed at any instant (SIGKILL included) leaves the ledger at a batch
boundary with nothing torn to repair; rows are replaced in place, so re-replays never grow
the file and nothing needs compacting; and in WAL mode other processes (``status``) read
while the graph holder writes. A batch is recorded only after the target has made it durable,
so a crash in between replays that batch again: upserts by id make that harmless.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from backends.errors import FileRefused, MigrationError
from backends.flock import flocked
from backends.safe_files import refuse_links_in

KEEP_RUNS = 100

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replayed (
    stream TEXT NOT NULL, id TEXT NOT NULL, group_id TEXT NOT NULL, hash TEXT NOT NULL,
    PRIMARY KEY (stream, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pruned (
    stream TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (stream, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
    n INTEGER PRIMARY KEY, stream TEXT NOT NULL, report TEXT NOT NULL
);
"""


class Ledger:
    """Migration progress under ``<home>/migration/ledger.sqlite3``. Not thread-safe; one per
    process and stream is the intended use.

    A ledger that cannot be written here (a read-only home, a full disk) opens read-only, so
    that reads (status, what is pending) still work: ``read_only`` then says why, and every
    write raises ``MigrationError`` saying it."""

    def __init__(self, connection: sqlite3.Connection, path: Path, read_only: str | None = None):
        self._db = connection
        self.path = path
        self.read_only = read_only

    @classmethod
    def open(cls, path: Path) -> Ledger:
        with contextlib.suppress(FileNotFoundError):
            # SQLite would open a FIFO or a device and block reading it (`status` hung).
            if not stat.S_ISREG(os.stat(path).st_mode):
                raise MigrationError(f"cannot open the migration ledger {path}: it is not a "
                                     "regular file")
        try:
            refuse_links_in(path.parent)  # SQLite would follow one to the ledger or its journals
        except FileRefused as exc:
            raise MigrationError(f"cannot open the migration ledger: {exc}") from exc
        try:
            return cls(_open_writable(path), path)
        except (sqlite3.Error, OSError) as exc:
            why = _reason(exc)
        try:
            return cls(_open_read_only(path), path, read_only=why)
        except sqlite3.Error as exc:
            raise MigrationError(f"cannot open the migration ledger {path}: {why}; "
                                 f"read-only: {exc}") from exc

    @classmethod
    def open_for_reading(cls, path: Path) -> Ledger:
        """The ledger as it is, for a dry run: nothing is created or written (an empty ledger
        when there is none)."""
        try:
            return cls(_open_read_only(path), path, read_only="opened for reading")
        except sqlite3.Error as exc:
            raise MigrationError(f"cannot read the migration ledger {path}: {exc}") from exc

    def replayed(self, stream: str) -> dict[str, str]:
        """id -> content hash of every episode recorded as replayed in ``stream``."""
        rows = self._db.execute("SELECT id, hash FROM replayed WHERE stream = ?", (stream,))
        return dict(rows.fetchall())

    def size(self, stream: str) -> int:
        row = self._db.execute("SELECT count(*) FROM replayed WHERE stream = ?", (stream,))
        return int(row.fetchone()[0])

    def record(self, stream: str, rows: Iterable[tuple[str, str, str]]) -> None:
        """Mark (id, group_id, hash) rows as replayed, all in one durable transaction."""
        with self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO replayed VALUES (?, ?, ?, ?)",
                ((stream, *row) for row in rows),
            )

    def forget(self, stream: str, ids: Collection[str]) -> None:
        with self._transaction():
            self._db.executemany(
                "DELETE FROM replayed WHERE stream = ? AND id = ?", ((stream, i) for i in ids)
            )

    def clear(self, stream: str) -> None:
        with self._transaction():
            self._db.execute("DELETE FROM replayed WHERE stream = ?", (stream,))

    def pruned(self, stream: str) -> set[str]:
        """Ids being deleted from the source on purpose (``--prune``): not replayed as deletes."""
        rows = self._db.execute("SELECT id FROM pruned WHERE stream = ?", (stream,))
        return {row[0] for row in rows}

    def mark_pruned(self, stream: str, ids: Collection[str]) -> None:
        with self._transaction():
            self._db.executemany(
                "INSERT OR IGNORE INTO pruned VALUES (?, ?)", ((stream, i) for i in ids)
            )

    def unmark_pruned(self, stream: str, ids: Collection[str]) -> None:
        with self._transaction():
            self._db.executemany(
                "DELETE FROM pruned WHERE stream = ? AND id = ?", ((stream, i) for i in ids)
            )

    def record_run(self, stream: str, report: Mapping[str, Any]) -> None:
        """Keep the report of a finished run (the newest KEEP_RUNS are kept)."""
        with self._transaction():
            self._db.execute(
                "DELETE FROM runs WHERE n <= (SELECT max(n) FROM runs) - ?", (KEEP_RUNS,)
            )
            self._db.execute(
                "INSERT INTO runs (stream, report) VALUES (?, ?)",
                (stream, orjson.dumps(report).decode()),
            )

    def last_run(self, stream: str) -> dict[str, Any] | None:
        """The JSON report of the newest finished run of ``stream``, or None."""
        row = self._db.execute(
            "SELECT report FROM runs WHERE stream = ? ORDER BY n DESC LIMIT 1", (stream,)
        ).fetchone()
        return None if row is None else dict(orjson.loads(row[0]))

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        if self.read_only is not None:
            raise MigrationError(
                f"cannot write the migration ledger {self.path}: it is read-only here "
                f"({self.read_only})"
            )
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise MigrationError(f"cannot write the migration ledger {self.path}: {exc}") from exc


def _open_writable(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    # One opener at a time: two converting a new ledger to WAL at once made one fail without
    # waiting, "database is locked", and its migration found the ledger read-only (8 of 1,800
    # openers of a new ledger, six at a time).
    with flocked(path.parent):
        db = sqlite3.connect(path, timeout=10.0, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(_SCHEMA)
        except BaseException:
            db.close()
            raise
    return db


def _open_read_only(path: Path) -> sqlite3.Connection:
    """The ledger for reading: as it is on disk; empty when there is none. A WAL database opened
    read-only needs its shared-memory file, which a read-only folder cannot take: then it is read
    as immutable (nothing can write it here either)."""
    if not path.exists():
        db = sqlite3.connect(":memory:", isolation_level=None)
        db.executescript(_SCHEMA)
        return db
    last: sqlite3.Error | None = None
    for options in ("mode=ro", "immutable=1"):
        db = sqlite3.connect(f"{path.absolute().as_uri()}?{options}", uri=True,
                             timeout=10.0, isolation_level=None)
        try:
            db.execute("SELECT count(*) FROM replayed").fetchone()
        except sqlite3.Error as exc:
            db.close()
            last = exc
            continue
        return db
    assert last is not None
    raise last


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)
