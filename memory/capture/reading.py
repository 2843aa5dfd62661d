"""Reading what a transcript gained since its cursor, within bounds.

A transcript path comes from a hook's input and may name anything: only a regular file is read
(``backends.safe_files``: a FIFO or ``/dev/zero`` is refused, never waited on). One read takes
at most ``Budget.bytes`` new bytes and ends its lines by ``Budget.seconds`` (the caller's
deadline); the rest is read next time, and the caller says so. A line longer than
``Budget.line`` is skipped (counted) without being held in memory. Only whole lines are read: a
last line still being written is left for the next read, unless ``final`` (the session is over:
a cut last line is then read, and counted as damaged when it is no JSON).

The cursor is checked first: a file smaller than the offset was truncated, one whose last read
line is no longer where it was was rewritten (or replaced: another inode); either way the file is
read again from the start (``Chunk.restarted`` says why)."""

from __future__ import annotations

import os
import time

from backends.lean_typing import TYPE_CHECKING
from backends.safe_files import MiB, open_regular
from memory.capture.cursor import Cursor, line_digest

if TYPE_CHECKING:
    from _typeshed import StrPath

CAPTURE_SECONDS = 15.0
"""how long a capturing hook reads and folds the transcript (Claude Code's timeout is 30 s);
what is left is read by the next one"""


class Budget:
    """How much one read may take. (Plain classes here and in the rest of capture: a
    dataclass's code generation, and the import of ``dataclasses``, cost a Stop more than its
    reading.)"""

    __slots__ = ("bytes", "deadline", "line")

    def __init__(self, bytes: int = 64 * MiB, line: int = 8 * MiB,
                 deadline: float | None = None) -> None:
        self.bytes = bytes
        self.line = line
        self.deadline = deadline
        """``time.monotonic()`` by which reading stops"""


class Chunk:
    def __init__(self, size: int = 0, inode: int = 0) -> None:
        self.lines: list[tuple[int, bytes]] = []
        """(offset, line without its newline) of each whole line read"""
        self.end = 0
        """the offset the next read starts at"""
        self.skipping = False
        self.restarted = ""
        self.too_long = 0
        self.left = 0
        """bytes not read this time (the budget ran out)"""
        self.size = size
        self.inode = inode


def read_new(path: StrPath, cursor: Cursor, budget: Budget, *, final: bool = False) -> Chunk:
    """The whole lines of ``path`` past ``cursor`` (see the module docstring). Raises
    ``FileRefused`` for what is no regular file, ``OSError`` (FileNotFoundError) as reading does."""
    fd = open_regular(path)
    try:
        status = os.fstat(fd)
        chunk = Chunk(size=status.st_size, inode=status.st_ino)
        start, skipping = cursor.offset, cursor.skipping
        if cursor.offset:
            why = _changed(fd, cursor, status.st_ino, status.st_size)
            if why:
                chunk.restarted, start, skipping = why, 0, False
        chunk.end, chunk.skipping = start, skipping
        stop = min(status.st_size, start + budget.bytes)
        _read_lines(fd, chunk, start, stop, budget, final and stop == status.st_size)
        chunk.left = max(status.st_size - chunk.end, 0)
        return chunk
    finally:
        os.close(fd)


def _changed(fd: int, cursor: Cursor, inode: int, size: int) -> str:
    if cursor.inode and inode != cursor.inode:
        return "replaced"
    if size < cursor.offset:
        return "truncated"
    for start, end, digest in ((0, cursor.first_end, cursor.first_digest),
                               (cursor.last_start, cursor.last_end, cursor.last_digest)):
        if end > start and line_digest(os.pread(fd, end - start, start)) != digest:
            return "rewritten"
    return ""


def _read_lines(fd: int, chunk: Chunk, start: int, stop: int, budget: Budget,
                final: bool) -> None:
    """Whole lines of ``[start, stop)`` into ``chunk``; ``chunk.end`` after the last one."""
    position = start
    line_start = start
    pending = b""
    skipping = chunk.skipping
    while position < stop:
        if budget.deadline is not None and time.monotonic() > budget.deadline:
            break
        data = os.pread(fd, min(MiB, stop - position), position)
        if not data:
            break
        cut = 0
        while True:
            newline = data.find(b"\n", cut)
            if newline < 0:
                break
            if skipping:
                skipping = False
            else:
                line = pending + data[cut:newline]
                if line.strip():
                    chunk.lines.append((line_start, line))
            pending = b""
            line_start = position + newline + 1
            chunk.end = line_start
            cut = newline + 1
        if not skipping:
            pending += data[cut:]
            if len(pending) > budget.line:
                pending, skipping = b"", True
                chunk.too_long += 1
        position += len(data)
        if skipping:
            chunk.end = position  # the long line's bytes are not read again
    chunk.skipping = skipping
    if final and pending.strip() and position >= stop:
        chunk.lines.append((line_start, pending))
        chunk.end = position


def subagent_transcripts(transcript: StrPath) -> list[str]:
    """The transcripts of a session's subagents: ``<session>/subagents/*.jsonl`` beside
    ``<session>.jsonl``."""
    folder = os.path.join(os.path.splitext(transcript)[0], "subagents")
    try:
        return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                      if name.endswith(".jsonl") and name != ".jsonl")
    except OSError:
        return []
