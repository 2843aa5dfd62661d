"""The one way the file layer changes its home: under the cross-process lock, in one index
transaction, undone should it fail before the index commits; never in a home that cannot be
written (a read-only mount, a full disk at open)."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from backends.errors import WriteFailed
from fallback import disk
from fallback.append import is_marked
from fallback.file_record import mtime
from fallback.index import FileIndex
from fallback.layout import Layout
from fallback.lock import FolderLock


class WriteGuard:
    def __init__(self, layout: Layout, index: FileIndex, lock: FolderLock,
                 tombstones: Path) -> None:
        self._layout, self._index, self.lock, self._tombstones = layout, index, lock, tombstones
        self._files = index.files
        self.read_only: str | None = None
        """why this home cannot be written, or None"""
        self._swept = False

    def check_writable(self) -> None:
        if self.read_only is not None:
            raise WriteFailed(f"cannot write in {self._layout.root}: {self.read_only}")

    def sweep(self) -> None:
        """Remove the temp files of dead writers, once, in a process that watches or writes: the
        scan of every group folder is a one-shot read's (a hook's, a search's) to skip."""
        if not self._swept:
            self._swept = True
            disk.remove_dead_writers_temps([*self._layout.group_folders(), self._tombstones])

    @contextmanager
    def writing(
        self,
        undo: list[Callable[[], object]] | None = None,
        after: list[Path] | None = None,
    ) -> Iterator[None]:
        """Hold the lock and one index transaction. Should anything fail before the index has
        committed (a full disk, say), ``undo`` puts back the files already changed, still under
        the lock: a write that raises leaves nothing that a later open would take in. The index's
        errors and the files' (an ``OSError``: no file handle left to read a view page, say)
        are raised as ``WriteFailed``. Files in
        ``after`` (old copies of moved episodes) are removed only once the index has committed,
        since putting a removed file back can itself fail on a full disk."""
        self.check_writable()
        self.sweep()
        with disk.held(self.lock):
            try:
                with self._index.transaction():
                    if self.lock.holder_died:
                        # A writer killed between its renames and its commit left files that no
                        # index has read, in folders no one knows: the next open reads them all.
                        self._files.forget_folders()
                    yield
            except BaseException as exc:
                for action in reversed(undo or []):
                    with contextlib.suppress(WriteFailed, OSError):
                        action()
                if isinstance(exc, sqlite3.Error):
                    raise WriteFailed(
                        f"cannot update the index {self._index.path}: {exc}") from exc
                if isinstance(exc, OSError):  # a read under the lock (a view page, say)
                    where = f"{exc.filename}: " if exc.filename else ""
                    raise WriteFailed(f"cannot write in {self._layout.root}: {where}"
                                      f"{exc.strerror or exc}") from exc
                raise
            self.lock.recovered()
            for path in after or []:
                try:
                    disk.remove(path)
                except WriteFailed as exc:  # the write stands; the leftover copy is reported
                    self._files.report(path, f"an older copy that could not be removed: {exc}")

    def record_folders(self, folders: Iterable[Path]) -> None:
        """Record the folders' mtimes as the index now agrees with them. A folder with no record
        (new, or forgotten after a writer died) may hold files no index has read: it keeps none
        till a catch-up reads it, and so does a folder holding files appended without the index
        (``fallback.append``)."""
        now = time.time_ns()
        known = self._files.folder_mtimes()
        for folder in folders:
            if str(folder) in known:
                self._files.record_folder(folder, None if is_marked(folder) else mtime(folder),
                                          now)
