"""Durable file operations: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Callable, Iterable

from backends import processes
from backends.errors import FileRefused, WriteFailed
from backends.lean_typing import TYPE_CHECKING, NamedTuple, overload
from backends.patterns import lazy
from fallback.lock import FolderLock

if TYPE_CHECKING:
    from pathlib import Path

    from _typeshed import StrPath

_TEMP_SUFFIX = ".tmp"
# What stage names its temp files: .<target name>.<writer pid>.<8 hex digits>.tmp
_TEMP_NAME = lazy(r"\..+\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.tmp")


class LockBusy(WriteFailed):
    """Another writer held the lock past the wait: busy, not broken (a full disk, a read-only
    home); the same change may well succeed a moment later."""


class Staged(NamedTuple):
    """A file's new content written and synced beside it, not yet in its place."""

    path: StrPath
    temp: str
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
        _remove_temp(self.temp)


def stage(path: StrPath, data: bytes) -> Staged:
    """Write ``data`` to a temp file beside ``path`` and fsync it: the slow part of a write,
    which needs no lock (the temp file's name is this writer's own)."""
    folder = _parent(path)
    make_folder(folder)
    name = f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(4).hex()}{_TEMP_SUFFIX}"
    temp = os.path.join(folder, name)
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
        _remove_temp(temp)
        if isinstance(exc, OSError):
            raise WriteFailed(f"cannot write {path}: {exc.strerror or exc}") from exc
        raise
    return Staged(path, temp, status)


def _remove_temp(temp: str) -> None:
    """Remove a staged temp file, best effort: gone already, or never made (on a read-only
    home: EROFS, not ENOENT)."""
    try:  # noqa: SIM105 (contextlib's import costs a lean Stop ~3M instructions)
        os.unlink(temp)
    except OSError:
        pass


@overload
def write_atomic(path: StrPath, data: bytes) -> os.stat_result: ...


@overload
def write_atomic(
    path: StrPath, data: bytes, abandon_if: Callable[[], bool]
) -> os.stat_result | None: ...


def write_atomic(
    path: StrPath, data: bytes, abandon_if: Callable[[], bool] | None = None
) -> os.stat_result | None:
    """Replace ``path`` with ``data``: temp file in the same folder, fsync, rename, fsync folder.
    Returns the new file's status, taken before anyone else could change it. ``abandon_if`` is
    asked last, just before the rename; when it says so, nothing is replaced and None returned."""
    staged = stage(path, data)
    try:
        if abandon_if is not None and abandon_if():
            return None
        staged.put()
        sync_folder(_parent(path))
    finally:
        staged.discard()
    return staged.status


class Swap(NamedTuple):
    """What ``replace_unless_changed`` did."""

    status: os.stat_result | None
    """the new file's status; None when it was not put in place (someone's file stands: the
    caller reads it again)"""
    found: bytes | None
    """a file it displaced and could not put back (someone's save, landed between two renames),
    which the caller must take in: it is nowhere else any more"""


def replace_unless_changed(
    path: Path, data: bytes, expected: Callable[[os.stat_result | None], bool]
) -> Swap:
    """Replace ``path`` with ``data`` unless the file there is no longer the one the caller read
    (``expected`` of its status; None: no file). A person's editor saves without our lock, by
    renaming its own temp file onto ``path``: a check followed by a rename would let a save
    that lands in between be overwritten unread. On Linux the rename is an exchange
    (``renameat2``), atomic with any other rename: what it displaced is checked afterwards and,
    when it is not what was read, exchanged back into place, so that it is never lost (and
    ours is seen for an instant at most). Elsewhere (or on a file system without it), the
    file is checked just before the rename: a save landing in that instant is still lost."""
    staged = stage(path, data)
    try:
        current = _status(path)
        if not expected(current):
            return Swap(None, None)
        if current is None:
            if not _put_new(staged):
                return Swap(None, None)
        elif _renameat2(staged.temp, path, _RENAME_EXCHANGE):
            if not expected(_status(staged.temp)):
                # Someone's save, landed since the check: put it back at once (ours showed
                # for an instant), for the caller to read and take in.
                _renameat2(staged.temp, path, _RENAME_EXCHANGE)
                back = _status(staged.temp)
                mine = back is not None and back.st_ino == staged.status.st_ino
                sync_folder(path.parent)
                # Not ours: a third save landed in that instant, and the one before it is
                # back in place; the caller takes in both.
                return Swap(None, None if mine else _read_displaced(staged.temp))
        else:
            staged.put()
        sync_folder(path.parent)
    except FileNotFoundError:  # the file went while we looked: the caller reads again
        return Swap(None, None)
    except OSError as exc:
        raise WriteFailed(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        staged.discard()
    return Swap(staged.status, None)


def _read_displaced(path: StrPath) -> bytes | None:
    """The bytes of the regular file at ``path`` (a link is no one's text: None)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _status(path: StrPath) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _put_new(staged: Staged) -> bool:
    """Rename the staged file onto its path unless a file appeared there: False then."""
    try:
        if _renameat2(staged.temp, staged.path, _RENAME_NOREPLACE):
            return True
        os.link(staged.temp, staged.path)  # fails too when the name is taken
    except FileExistsError:
        return False
    return True


_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _renameat2(source: StrPath, target: StrPath, flags: int) -> bool:
    """Linux's ``renameat2``; False when the system or the file system has none."""
    call = _renameat2_function()
    if call is None:
        return False
    if call(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target), flags) == 0:
        return True
    import ctypes

    error = ctypes.get_errno()
    if error in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(error, os.strerror(error), os.fspath(target))


@functools.cache
def _renameat2_function() -> Callable[..., int] | None:
    import ctypes  # only writing a view needs it (a few ms)

    try:
        call: Callable[..., int] = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    return call


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
                names = [e.name for e in entries if _TEMP_NAME().fullmatch(e.name)]
        except OSError:
            continue
        for name in names:
            match = _TEMP_NAME().fullmatch(name)
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


def _parent(path: StrPath) -> str:
    """The folder holding ``path`` (``Path.parent`` of text: ``.`` for a bare name)."""
    return os.path.dirname(path) or os.curdir


def make_folder(folder: StrPath) -> None:
    """Create ``folder``, refusing to write through a symbolic link someone put in our tree."""
    if os.path.islink(folder) or os.path.islink(_parent(folder)):
        raise WriteFailed(f"{folder} is a symbolic link; the file layer writes only in its folder")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise WriteFailed(f"cannot create {folder}: {exc.strerror or exc}") from exc


def sync_folder(folder: StrPath) -> None:
    """Make the renames and deletes done in ``folder`` durable."""
    try:
        _fsync_folder(folder)
    except OSError as exc:
        raise WriteFailed(f"cannot sync {folder}: {exc.strerror or exc}") from exc


def _fsync_folder(folder: StrPath) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class held:
    """``with held(lock) as got:`` holds the cross-process ``lock``. ``WriteFailed`` says why
    when it cannot be had: held too long by another writer, or its file cannot be opened (a
    read-only home, no permission, a symbolic link). Without ``wait``, ``got`` is False at once
    (holding nothing) when another holds it. (A class, as ``backends.flock.flocked``.)"""

    def __init__(self, lock: FolderLock, *, wait: bool = True) -> None:
        self._lock = lock
        self._wait = wait
        self._got = False

    def __enter__(self) -> bool:
        lock = self._lock
        try:
            self._got = lock.acquire(wait=self._wait)
        except (OSError, FileRefused) as exc:
            why = exc.reason if isinstance(exc, FileRefused) else exc.strerror or exc
            raise WriteFailed(
                f"cannot write in {_parent(lock.path)}: cannot take the lock {lock.path}: {why}"
            ) from exc
        if not self._got and self._wait:
            raise LockBusy(f"the lock {lock.path} was held too long")
        return self._got

    def __exit__(self, *exc: object) -> None:
        if self._got:
            self._lock.release()
