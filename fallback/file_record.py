"""What the files looked like when the file layer's index last agreed with them (each episode
file's signature, each folder's mtime, each view's signature), and the files found unusable.
A check compares these with the disk and re-reads only what differs."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # threading's import: 4M instructions of the tool hook's quick answer
    import threading

Signature = str
"""inode, modification time and size of a file: equal signatures let a check skip the read"""

# A folder modified within this long of being recorded may change again within the file
# system's timestamp granularity without its mtime moving: such a record is checked next time.
_RACY_NS = 50_000_000
# A whole-second mtime comes from a file system that keeps seconds (ext4 with small inodes,
# HFS+, FAT keeps two): a file a person adds within that second leaves the mtime as it was.
_SECOND_NS = 1_000_000_000
_COARSE_RACY_NS = 2 * _SECOND_NS


def signature(stat: os.stat_result) -> Signature:
    return f"{stat.st_ino}:{stat.st_mtime_ns}:{stat.st_size}"


def signature_of(path: Path) -> Signature | None:
    """The signature of the file at ``path``; None when there is none."""
    try:
        return signature(path.stat())
    except FileNotFoundError:
        return None


def mtime(folder: Path) -> int | None:
    """The folder's mtime (ns); None when it is gone. (Here, not with the writers: a reader
    of the index alone asks it, and needs none of their modules.)"""
    try:
        return os.stat(folder).st_mtime_ns
    except FileNotFoundError:
        return None


class FileRecord:
    """The record over the index's connection (shared, with its lock and transactions)."""

    def __init__(self, db: sqlite3.Connection, lock: threading.RLock,
                 transaction: Callable[[], AbstractContextManager[None]]) -> None:
        self._db = db
        self._lock = lock
        self.transaction = transaction

    def signature_at(self, path: Path) -> Signature | None:
        """The signature recorded for the episode file at ``path`` (``<group>/<file name>``)."""
        with self._lock:
            row = self._db.execute("SELECT sig FROM episodes WHERE group_id = ? AND file = ?",
                                   (path.parent.name, path.name)).fetchone()
        return None if row is None else str(row[0])

    def in_group(self, group_id: str) -> dict[str, str]:
        """id -> signature of every episode of ``group_id``."""
        with self._lock:
            return dict(self._db.execute("SELECT id, sig FROM episodes WHERE group_id = ?",
                                         (group_id,)).fetchall())

    def folder_mtimes(self) -> dict[str, int]:
        """path -> mtime of every folder whose mtime is recorded (one query: a reader of the
        index alone asks for all of them)."""
        with self._lock:
            return {str(path): int(value) for path, value in
                    self._db.execute("SELECT path, mtime FROM folders")}

    def record_folder(self, folder: Path, mtime_ns: int | None, now_ns: int) -> None:
        """Remember a folder's mtime once the index agrees with it (None: the folder is gone).
        A racy one is recorded as -1, which never matches, so the next check reads it."""
        with self.transaction():
            if mtime_ns is None:
                self._db.execute("DELETE FROM folders WHERE path = ?", (str(folder),))
                return
            racy = _COARSE_RACY_NS if mtime_ns % _SECOND_NS == 0 else _RACY_NS
            value = -1 if now_ns - mtime_ns < racy else mtime_ns
            self._db.execute("INSERT OR REPLACE INTO folders VALUES (?, ?)", (str(folder), value))

    def forget_folders(self) -> None:
        """Forget every folder's mtime: the next check reads every folder again."""
        with self.transaction():
            self._db.execute("DELETE FROM folders")

    def view_signature(self, path: Path) -> Signature | None:
        with self._lock:
            row = self._db.execute("SELECT sig FROM views WHERE path = ?",
                                   (str(path),)).fetchone()
        return None if row is None else str(row[0])

    def view_signatures(self) -> dict[str, Signature]:
        """path -> signature of the view files as last written or reconciled."""
        with self._lock:
            return {str(path): str(sig) for path, sig in
                    self._db.execute("SELECT path, sig FROM views")}

    def record_view(self, path: Path, sig: Signature | None) -> None:
        with self.transaction():
            if sig is None:
                self._db.execute("DELETE FROM views WHERE path = ?", (str(path),))
            else:
                self._db.execute("INSERT OR REPLACE INTO views VALUES (?, ?)", (str(path), sig))

    def report(self, path: Path, reason: str) -> None:
        with self.transaction():
            self._db.execute("INSERT OR REPLACE INTO problems VALUES (?, ?)", (str(path), reason))

    def clear_problem(self, path: Path) -> None:
        with self.transaction():
            self._db.execute("DELETE FROM problems WHERE path = ?", (str(path),))

    def problems(self) -> list[tuple[Path, str]]:
        with self._lock:
            return [(Path(path), reason) for path, reason in
                    self._db.execute("SELECT path, reason FROM problems ORDER BY path")]

    def problems_in(self, folder: Path) -> set[str]:
        """Names of the files in ``folder`` reported as problems."""
        prefix = str(folder) + os.sep
        with self._lock:
            rows = self._db.execute("SELECT path FROM problems WHERE path > ? AND path < ?",
                                    (prefix, prefix + "\U0010ffff")).fetchall()
        return {Path(row[0]).name for row in rows if Path(row[0]).parent == folder}


