"""Durable file operations: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple, overload

from backends import processes
from backends.errors import FileRefused, WriteFailed
from fallback.lock import FolderLock

_TEMP_SUFFIX = ".tmp"
# What stage names its temp files: .<target name>.<writer pid>.<8 hex digits>.tmp
_TEMP_NAME = re.compile(r"\..+\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.tmp")


class LockBusy(WriteFailed):
    """Another writer held the lock past the wait: busy, not broken (a full disk, a read-only
    home); the same change may well succeed a moment later."""


class Staged(NamedTuple):
    """A file's new content written and synced beside it, not yet in its place."""

    path: Path
    temp: Path
    status: os.stat_result
    """the new file's status (a rename keeps inode, size and mtime)"""

    def put(self) -> None:
        """Rename it into place; durable once its folder is synced (``sync_folder``)."""
        try:
            os.replace(self.temp, self.path)
        except OSError as exc:
            self.discard()
            raise WriteFailed(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def discard(self) -> None:
        """Remove the temp file if it is still there (not put, or put failed)."""
        with contextlib.suppress(OSError):
            self.temp.unlink()


def stage(path: Path, data: bytes) -> Staged:
    """Write ``data`` to a temp file beside ``path`` and fsync it: the slow part of a write,
    which needs no lock (the temp file's name is this writer's own)."""
    folder = path.parent
    make_folder(folder)
    temp = folder / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}{_TEMP_SUFFIX}"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            status = os.fstat(fd)
        finally:
            os.close(fd)
    except BaseException as exc:
        with contextlib.suppress(OSError):  # never made, on a read-only home: EROFS, not ENOENT
            temp.unlink()
        if isinstance(exc, OSError):
            raise WriteFailed(f"cannot write {path}: {exc.strerror or exc}") from exc
        raise
    return Staged(path, temp, status)


@overload
def write_atomic(path: Path, data: bytes) -> os.stat_result: ...


@overload
def write_atomic(
    path: Path, data: bytes, abandon_if: Callable[[], bool]
) -> os.stat_result | None: ...


def write_atomic(
    path: Path, data: bytes, abandon_if: Callable[[], bool] | None = None
) -> os.stat_result | None:
    """Replace ``path`` with ``data``: temp file in the same folder, fsync, rename, fsync folder.
    Returns the new file's status, taken before anyone else could change it. ``abandon_if`` is
    asked last, just before the rename; when it says so, nothing is replaced and None returned."""
    staged = stage(path, data)
    try:
        if abandon_if is not None and abandon_if():
            return None
        staged.put()
        sync_folder(path.parent)
    finally:
        staged.discard()
    return staged.status


def is_temporary(path: Path) -> bool:
    """True for the temp files ``stage`` writes (renamed into place, or left by a dead writer)."""
    return path.name.startswith(".") and path.name.endswith(_TEMP_SUFFIX)


def remove_dead_writers_temps(folders: Iterable[Path]) -> list[Path]:
    """Delete, in ``folders``, the temp files of writers that died before their rename (killed,
    crashed, powered off): those whose writer pid is no live process. A live writer's are never
    touched; a pid reused since is taken for alive (the file stays, harmless). Returns what went.
    Best effort: a folder that cannot be changed (a read-only home) keeps its leftovers.

    Pids are this machine's: on a folder shared between machines or pid namespaces, a remote
    writer's temp file could be taken for a dead one; its rename then fails and its write raises
    ``WriteFailed``. Nothing acknowledged is lost either way."""
    removed = []
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                names = [e.name for e in entries if _TEMP_NAME.fullmatch(e.name)]
        except OSError:
            continue
        for name in names:
            match = _TEMP_NAME.fullmatch(name)
            if match is None or _alive(int(match["pid"])):
                continue
            try:
                (folder / name).unlink()
            except OSError:
                continue
            removed.append(folder / name)
    return removed


def _alive(pid: int) -> bool:
    if pid <= 0:
        return True  # not a pid we wrote: leave it
    return processes.alive(pid)


def remove(path: Path) -> bool:
    """Delete ``path`` durably; False when it was not there."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise WriteFailed(f"cannot delete {path}: {exc.strerror or exc}") from exc
    _fsync_folder(path.parent)
    return True


def make_folder(folder: Path) -> None:
    """Create ``folder``, refusing to write through a symbolic link someone put in our tree."""
    if folder.is_symlink() or folder.parent.is_symlink():
        raise WriteFailed(f"{folder} is a symbolic link; the file layer writes only in its folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteFailed(f"cannot create {folder}: {exc.strerror or exc}") from exc


def sync_folder(folder: Path) -> None:
    """Make the renames and deletes done in ``folder`` durable."""
    try:
        _fsync_folder(folder)
    except OSError as exc:
        raise WriteFailed(f"cannot sync {folder}: {exc.strerror or exc}") from exc


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def held(lock: FolderLock, *, wait: bool = True) -> Iterator[bool]:
    """Hold the cross-process ``lock``. ``WriteFailed`` says why when it cannot be had: held too
    long by another writer, or its file cannot be opened (a read-only home, no permission, a
    symbolic link). Without ``wait``, yields False at once (holding nothing) when another
    holds it."""
    try:
        got = lock.acquire(wait=wait)
    except (OSError, FileRefused) as exc:
        why = exc.reason if isinstance(exc, FileRefused) else exc.strerror or exc
        raise WriteFailed(
            f"cannot write in {lock.path.parent}: cannot take the lock {lock.path}: {why}"
        ) from exc
    if not got:
        if wait:
            raise LockBusy(f"the lock {lock.path} was held too long")
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
