"""Where capture stopped in each transcript, kept in the home (``<home>/capture/``), so a Stop
reads only what was appended since the last one.

A cursor holds the offset read up to, where the last whole line read starts and ends and that
line's digest and ``uuid`` (and the first line's digest), the folded session so far, and a
digest of each memory written. A transcript that is no longer what the cursor read (truncated,
rewritten, replaced by another file) is noticed by ``reading.read_new`` and read again from the
start."""

from __future__ import annotations

import json
import os

from backends.builtin_hashes import blake2b_hex
from backends.errors import FileRefused
from backends.lean_typing import TYPE_CHECKING
from backends.safe_files import MiB, read_regular

if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

FOLDER = "capture"
_LIMIT = 16 * MiB


class Cursor:
    def __init__(self, path: str, offset: int = 0, inode: int = 0, last_start: int = 0,
                 last_end: int = 0, last_digest: str = "", last_uuid: str = "",
                 first_end: int = 0, first_digest: str = "", skipping: bool = False,
                 session: dict[str, Any] | None = None,
                 written: dict[str, str] | None = None) -> None:
        self.path = path
        self.offset = offset
        self.inode = inode
        self.last_start = last_start
        self.last_end = last_end
        self.last_digest = last_digest
        self.last_uuid = last_uuid
        self.first_end = first_end
        self.first_digest = first_digest
        """the first line's: a file rewritten from its start shows there first"""
        self.skipping = skipping
        """the offset is inside a line too long to keep, skipped up to its end"""
        self.session = session
        self.written: dict[str, str] = {} if written is None else written


def cursor_name(transcript: StrPath) -> str:
    """Where the cursor of ``transcript`` is, relative to the home."""
    where = os.path.abspath(transcript)
    name = blake2b_hex(where.encode("utf-8", "surrogateescape"), 12)
    return os.path.join(FOLDER, f"{name}.json")


def load(home: StrPath, transcript: StrPath) -> Cursor:
    """The cursor of ``transcript``; a new one when there is none, or it is unreadable (the
    transcript is then read again from the start, which rewrites nothing that is stored)."""
    where = os.path.join(home, cursor_name(transcript))
    try:  # json, not orjson: a Stop with nothing new (``quick``) imports no more than this
        data = json.loads(read_regular(where, limit=_LIMIT, follow=False))
        cursor = Cursor(**data)
    except (FileNotFoundError, FileRefused, ValueError, TypeError):
        return Cursor(os.path.abspath(transcript))
    numbers = (cursor.offset, cursor.inode, cursor.last_start, cursor.last_end, cursor.first_end)
    if not all(isinstance(n, int) and n >= 0 for n in numbers) or not isinstance(
            cursor.written, dict) or not isinstance(cursor.session, dict | None):
        return Cursor(os.path.abspath(transcript))
    return cursor


def save(home: StrPath, cursor: Cursor) -> None:
    from fallback.disk import write_atomic

    # The standard library's json: orjson's import (dataclasses, uuid) costs a later Stop more
    # than it saves on a cursor of some kilobytes.
    data = json.dumps(vars(cursor), separators=(",", ":"))  # ASCII: a path's every byte too
    write_atomic(os.path.join(home, cursor_name(cursor.path)), data.encode())


def line_digest(line: bytes) -> str:
    return blake2b_hex(line, 12)
