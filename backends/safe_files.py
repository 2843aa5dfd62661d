"""Reading and writing files that may be hostile: a home is data, not code, and a file argument
may name a FIFO, ``/dev/zero``, a folder or a link that leads out of the home.

Reads take regular files only, bounded in size, opened without blocking (a FIFO with no writer
would hang an ``open``). Writes inside a home never follow a final symbolic link: ``O_NOFOLLOW``
makes the open fail instead, so a link someone planted cannot redirect a write outside."""

from __future__ import annotations

import errno
import os
import stat

from backends.errors import FileRefused
from backends.lean_typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import StrPath

MiB = 1 << 20
NOTE_LIMIT = 4096
"""the most of a note beside the data that is read (a pid, a position: a few bytes)"""


def read_regular(
    path: StrPath, *, limit: int, follow: bool = True, within: StrPath | None = None
) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them.

    ``follow=False`` refuses a final symbolic link (a home's own files); ``within`` refuses a file
    whose real location is outside that folder (a link in a parent folder, or a final link
    followed). Raises
    ``FileRefused`` for a FIFO, device, folder, link or a file over ``limit``; ``FileNotFoundError``
    passes through, so callers can treat a missing file as they always did."""
    return read_regular_status(path, limit=limit, follow=follow, within=within)[0]


def read_regular_status(
    path: StrPath, *, limit: int, follow: bool = True, within: StrPath | None = None
) -> tuple[bytes, os.stat_result]:
    """``read_regular``, and the file's status as it was opened (what a caller compares with
    the file later: size, modification time, inode)."""
    fd = open_regular(path, follow=follow, within=within)
    try:
        status = os.fstat(fd)
        if status.st_size > limit:
            raise FileRefused(path, f"is {status.st_size} bytes, over the limit of {limit}")
        chunks = []
        left = limit + 1  # a file growing while read is caught too
        while left > 0:
            chunk = os.read(fd, min(left, MiB))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise FileRefused(path, f"grew over the limit of {limit} bytes while read")
    return data, status


def open_regular(path: StrPath, *, follow: bool = True, within: StrPath | None = None) -> int:
    """A descriptor of the regular file at ``path``, open for reading without blocking, for a
    caller that reads only part of it (a transcript from where it stopped). Refuses what
    ``read_regular`` refuses, but for size; ``FileNotFoundError`` passes through."""
    if within is not None:
        _check_within(path, within)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    return _open_regular_file(path, flags, 0, "is a symbolic link")


def open_for_write(path: StrPath, flags: int, mode: int = 0o644) -> int:
    """``os.open`` for writing a home's own file, refusing a final symbolic link (``FileRefused``)
    and anything that is not a regular file once opened. Other ``OSError``s pass through."""
    fd = _open_regular_file(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, mode,
                            "is a symbolic link; dualmem writes through none")
    os.set_blocking(fd, True)
    return fd


def _open_regular_file(path: StrPath, flags: int, mode: int, link: str) -> int:
    """``os.open`` that refuses (``FileRefused``) a final link ``O_NOFOLLOW`` met, saying
    ``link``, and whatever is not a regular file; other ``OSError``s pass through."""
    try:
        fd = os.open(path, flags, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRefused(path, link) from exc
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise FileRefused(path, "is not a regular file") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileRefused(path, "is not a regular file")
    return fd


def overwrite(path: StrPath, data: bytes) -> None:
    """Replace the content of the home's file ``path`` with ``data`` in place, never through a
    symbolic link (``FileRefused``): for a note that may be lost, not for data (those are
    written aside and renamed into place)."""
    fd = open_for_write(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def refuse_link(path: StrPath) -> None:
    """``FileRefused`` when ``path`` is a symbolic link, dangling or not: for what cannot be
    opened with ``O_NOFOLLOW``, a folder about to be made or entered, checked just before."""
    if os.path.islink(path):
        raise FileRefused(path, "is a symbolic link; dualmem follows none in its home")


def refuse_links_in(folder: StrPath) -> None:
    """``FileRefused`` when ``folder``, or anything directly in it, is a symbolic link: for a
    folder of files only dualmem names, opened by a database engine that follows links and
    offers no way not to (Kùzu's file and its WAL, SQLite's database and its -wal, -shm and
    -journal files). A missing folder holds none."""
    refuse_link(folder)
    try:
        with os.scandir(folder) as entries:
            linked = sorted(entry.name for entry in entries if entry.is_symlink())
    except (FileNotFoundError, NotADirectoryError):
        return
    if linked:
        refuse_link(os.path.join(folder, linked[0]))


def _check_within(path: StrPath, root: StrPath) -> None:
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)  # where a final link leads too, when it is followed
    if os.path.commonpath([real, real_root]) != real_root:
        raise FileRefused(path, f"lies outside {root} through a symbolic link")
