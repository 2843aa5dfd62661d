"""A watchdog observer that reports the files and folders changed below a root, in batches from
a thread of its own, so files written by other processes or edited by people reach the index.

Batches, because the events of another process's write (a temp file created, closed, renamed)
arrive while that writer still holds the lock: reacting to each sent the watcher after the lock
once per event, and writers queued behind it. A short settle lets the writer commit first (its
file then agrees with the index and costs no lock at all) and folds a burst into one look.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
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


OnChanges = Callable[[dict[Path, bool]], dict[Path, bool]]
"""Called with the paths changed since the last call, each with whether someone other than
dualmem has just finished writing it: closed it after writing, or renamed one of their files onto
it. dualmem's own writes (renamed from its temp files) and files just created (maybe
half-written, their close comes later) are changes too, but not finished edits. Returns the
changes to deliver again with the next batch (not settled yet)."""

SETTLE = 0.02
"""seconds between the first event of a batch and its delivery: about one write's lock hold"""


class _StopRace(logging.Filter):
    """watchdog logs an error when an inotify read races the observer's stop. It is harmless,
    and would put a stray line on the CLI's stderr, which carries one line per error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "called when the thread is inactive" not in record.getMessage()


_STOP_RACE = _StopRace()
_WATCHED_TWICE = r"Callback with id '\d+' already exists for watch"
"""watchdog warns, from its one inotify thread, when a folder made just as its parent is
first watched (``held/<group>`` with ``held/``) is watched twice: the callback replaces
itself, harmless. Under ``-W error`` that warning raised in the thread and ended it, and no
change was heard again by any watcher of the process (a typed bullet never taken in)."""


class Watcher:
    def __init__(self, root: Path, on_changes: OnChanges, *, settle: float = SETTLE) -> None:
        inotify_log = logging.getLogger("watchdog.observers.inotify")
        if _STOP_RACE not in inotify_log.filters:
            inotify_log.addFilter(_STOP_RACE)
        warnings.filterwarnings("ignore", _WATCHED_TWICE, RuntimeWarning, r"watchdog\.")
        self._on_changes = on_changes
        self._settle = settle
        self._pending: dict[Path, bool] = {}
        self._stopping = False
        self._arrived = threading.Condition()
        self._deliverer = threading.Thread(target=self._deliver, name="dualmem-watch",
                                           daemon=True)
        self._deliverer.start()
        self._observer = Observer()
        self._observer.daemon = True
        self._observer.schedule(
            _Handler(self._add), os.fspath(root), recursive=True, event_filter=_WATCHED
        )
        self._observer.start()

    def stop(self) -> None:
        self._observer.stop()
        self._observer.join()
        with self._arrived:
            self._stopping = True
            self._arrived.notify()
        self._deliverer.join()

    def _add(self, path: Path, edited: bool) -> None:
        with self._arrived:
            self._pending[path] = self._pending.get(path, False) or edited
            self._arrived.notify()

    def _deliver(self) -> None:
        while True:
            with self._arrived:
                self._arrived.wait_for(lambda: self._pending or self._stopping)
                # Let the burst settle (waiting releases the condition: events join the batch).
                self._arrived.wait_for(lambda: self._stopping, timeout=self._settle)
                if self._stopping:
                    return
                batch, self._pending = self._pending, {}
            again = self._on_changes(batch)
            with self._arrived:
                for path, edited in again.items():
                    self._pending[path] = self._pending.get(path, False) or edited


class _Handler(FileSystemEventHandler):
    def __init__(self, add: Callable[[Path, bool], None]) -> None:
        self._add = add

    def on_any_event(self, event: FileSystemEvent) -> None:
        if type(event) not in _WATCHED:
            return
        source = Path(os.fsdecode(event.src_path))
        if not event.dest_path:
            self._add(source, isinstance(event, FileClosedEvent))
            return
        self._add(source, False)
        self._add(Path(os.fsdecode(event.dest_path)), not is_temporary(source))
