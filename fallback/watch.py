"""A watchdog observer that reports every file or folder changed below a root, from its own
thread, so files written by other processes or edited by people reach the index."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from fallback.disk import is_temporary

# A file is looked at once it is closed after writing, renamed into place, or deleted; single
# writes are left out, as they show half-written files. So are opening and reading: the handler
# reads files itself and must not hear that.
_WATCHED = [
    FileCreatedEvent, FileClosedEvent, FileMovedEvent, FileDeletedEvent,
    DirCreatedEvent, DirMovedEvent, DirDeletedEvent,
]


OnChange = Callable[[Path, bool], None]
"""Called with a changed path and whether someone other than dualmem has just finished writing
it: closed it after writing, or renamed one of their files onto it. dualmem's own writes (renamed
from its temp files) and files just created (maybe half-written, their close comes later) are
changes too, but not finished edits."""


class _StopRace(logging.Filter):
    """watchdog logs an error when an inotify read races the observer's stop. It is harmless,
    and would put a stray line on the CLI's stderr, which carries one line per error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


_STOP_RACE = _StopRace()


class Watcher:
    def __init__(self, root: Path, on_change: OnChange) -> None:
        inotify_log = logging.getLogger("watchdog.observers.inotify")
        if _STOP_RACE not in inotify_log.filters:
            inotify_log.addFilter(_STOP_RACE)
        self._observer = Observer()
        self._observer.daemon = True
        self._observer.schedule(
            _Handler(on_change), os.fspath(root), recursive=True, event_filter=_WATCHED
        )
        self._observer.start()

    def stop(self) -> None:
        self._observer.stop()
        self._observer.join()


class _Handler(FileSystemEventHandler):
    def __init__(self, on_change: OnChange) -> None:
        self._on_change = on_change

    def on_any_event(self, event: FileSystemEvent) -> None:
        if type(event) not in _WATCHED:
            return
        source = Path(os.fsdecode(event.src_path))
        if not event.dest_path:
            self._on_change(source, isinstance(event, FileClosedEvent))
            return
        self._on_change(source, False)
        self._on_change(Path(os.fsdecode(event.dest_path)), not is_temporary(source))
