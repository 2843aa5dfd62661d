"""A server graph's search index kept on this machine between opens.

Building the index reads every episode from the server (through the client's pure-Python
protocol parser) and indexes it: most of a second per thousand episodes. Kept in
``<folder>/index.sqlite3`` with a note of the server graph's instance and the change counter up
to which it holds every change, an open reads only the changes made since.

One process uses a copy at a time (``flock`` on ``<folder>/lock``; the kernel drops it with a
process that dies); the others index in memory. The note is removed when the copy is taken and
written back at close, so a process killed meanwhile leaves none and the next open rebuilds. A
note of another instance (the graph emptied or replaced since) is not used.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson

from backends.errors import FileRefused
from backends.graph.index import EpisodeIndex
from backends.safe_files import NOTE_LIMIT, open_for_write, overwrite, read_regular, refuse_links_in

NOTE = "server.json"
LOCK = "lock"


@dataclass(frozen=True)
class Note:
    instance: str
    """the server graph's instance (``DualmemMeta {key: 'instance'}``), new when it is emptied"""
    seen: int
    """the change counter up to which the copy holds every change"""
    token: str
    """the index's own token (``EpisodeIndex.rebuilt``)"""
    count: int
    """episodes in the index"""


class LocalCopy:
    """The copy in one folder, held by this process until ``close``."""

    def __init__(self, fd: int, folder: Path, index: EpisodeIndex, note: Note | None) -> None:
        self._fd = fd
        self._folder = folder
        self.index = index
        self.note = note
        """what the last process to close it recorded (None: rebuild)"""

    @classmethod
    def take(cls, folder: Path, dimension: int, embedder: str) -> LocalCopy | None:
        """The copy in ``folder`` for this process; None when another process holds it or it
        cannot be kept there (a read-only home): the caller indexes in memory."""
        try:
            refuse_links_in(folder)  # its index's database would follow one out of the home
            folder.mkdir(parents=True, exist_ok=True)
            fd = open_for_write(folder / LOCK, os.O_RDWR | os.O_CREAT)
        except (OSError, FileRefused):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            note = _read(folder / NOTE)
            (folder / NOTE).unlink(missing_ok=True)
            index = EpisodeIndex.open(folder, dimension, embedder)
        except (OSError, sqlite3.Error, FileRefused):
            os.close(fd)
            return None
        return cls(fd, folder, index, note)

    def usable(self, instance: str, counter: int) -> Note | None:
        """The note when the copy holds this graph instance's episodes whole, up to a change
        the server has reached."""
        note = self.note
        if note is None or note.instance != instance or note.seen > counter:
            return None
        return note if self.index.current(note.token, note.count) else None

    def close(self, note: Note | None) -> None:
        """Close the index, record ``note`` (None: the next open rebuilds) and let it go."""
        try:
            self.index.close()
            if note is not None:
                # A full disk, or a link: the next open rebuilds.
                with contextlib.suppress(OSError, FileRefused):
                    part = self._folder / f"{NOTE}.part"
                    overwrite(part, orjson.dumps(asdict(note)))
                    os.replace(part, self._folder / NOTE)
        finally:
            os.close(self._fd)


def _read(path: Path) -> Note | None:
    try:
        raw = orjson.loads(read_regular(path, limit=NOTE_LIMIT, follow=False))
        return Note(str(raw["instance"]), int(raw["seen"]), str(raw["token"]),
                    int(raw["count"]))
    except (FileNotFoundError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None  # none, or damaged: rebuilt
