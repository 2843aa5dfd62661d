"""Taking in what changed on disk without this process: at open, a catch-up of the folders whose
mtime moved and the views whose signature did; while it runs, the watcher's batches (a person's
edits, and the writes of other processes, which are in the shared index by then)."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from backends.errors import DualmemError, FileRefused, StoreCorrupt
from backends.model import GROUP_ID
from backends.safe_files import read_regular_status
from fallback import codec, disk
from fallback.append import marks
from fallback.blocking import blocking
from fallback.file_record import mtime, signature, signature_of
from fallback.index import Row
from fallback.layout import FILE_LIMIT, file_name, is_episode_name
from fallback.parts import Parts
from fallback.unseen import unseen

if TYPE_CHECKING:
    import logging

    from fallback.keeper import ViewKeeper
    from fallback.watch import Watcher


def _log() -> logging.Logger:
    import logging  # only a rare event logs; the import is ~10 ms of every one-shot command

    return logging.getLogger(__name__)


class Intake:
    def __init__(self, parts: Parts, keeper: Callable[[], ViewKeeper], defer_limit: float) -> None:
        self._layout, self._index, self._guard, _, _ = parts
        self._files = self._index.files
        self._keeper = keeper
        """the views' keeper, made when first asked for (no view changed: never)"""
        self._defer_limit = defer_limit
        """seconds a change seen by the watcher waits for the lock to be free before it waits
        for it"""
        self._watcher: Watcher | None = None
        self.listeners: list[Callable[[], None]] = []
        """called (from the watcher's thread) each time a change may have reached the index"""
        self._deferred: dict[Path, float] = {}
        """changes the watcher has put off while the lock was busy -> when first seen"""
        self._stopped = False

    @property
    def watching(self) -> bool:
        return self._watcher is not None

    def start(self, *, fresh: bool, watch: bool) -> None:
        """Take in what changed on disk (``fresh``: everything, into an empty index), after
        starting to watch when ``watch``."""
        # Watch first, then check: a change made while checking is seen by one or the other.
        if watch:
            self._guard.sweep()
            from fallback.watch import Watcher  # watchdog: only a process that watches

            self._watcher = Watcher(self._layout.root, self._on_changes)
        try:
            self._catch_up(everything=fresh)
        except disk.LockBusy:
            if fresh:  # an empty index: reads need what the files hold (open makes one in memory)
                raise
            # Other writers kept the lock the whole wait: they keep the shared index current,
            # and what changed unseen is taken in by the next catch-up. Refusing every write of
            # this process for a busy moment at its start would be far worse.
            _log().info("the lock was busy; taking in unseen changes is put off")

    async def stop(self) -> None:
        self._stopped = True
        if self._watcher is not None:
            await blocking(self._watcher.stop)

    def _catch_up(self, *, everything: bool = False) -> None:
        """Bring the index up to date with the disk: re-read the group folders whose mtime
        moved (or all of them), reconcile the views whose signature did and render again the
        views of which a page we wrote is gone. Takes the lock only when something moved, so an
        open of an unchanged home writes nothing."""
        stale, edited, lost = found = unseen(self._layout, self._files, everything=everything)
        if not any(found):
            return
        if self._guard.read_only is not None:
            with self._index.transaction():  # what the files hold; nothing is written to them
                for group in stale:
                    self._sync_group(group)
            return
        # Marks of appends read here go once the index has committed (``fallback.append``).
        with self._guard.writing(after=marks(map(self._layout.group_folder, stale))):
            for group in stale:
                self._sync_group(group)
            for view in edited:
                group_kind = self._layout.view_of(view)
                if group_kind is not None:
                    try:
                        self._keeper().reconcile(*group_kind, view.name)
                    except StoreCorrupt as exc:  # one view we cannot read holds up no other
                        self._files.report(view, exc.detail)
            if lost:  # else a read that only re-checked a folder loads no view's module
                self._keeper().render(lost)

    def _on_changes(self, changes: dict[Path, bool]) -> dict[Path, bool]:
        """Take in changes below the root (called from the watcher's thread, a batch at a time);
        returns those to look at again with the next batch. Most are writes of dualmem
        processes, in the shared index by now: they cost a look, never the lock. Failures are
        reported as problems: a watcher must not die."""
        now = time.monotonic()
        changes = self._with_views_of_new_folders(changes)
        later: dict[Path, bool] = {}
        groups: dict[str, list[Path]] = {}
        """group -> its episode files the index disagrees with (none: its folder changed)"""
        for path, edited in sorted(changes.items()):
            group = self._layout.episode_group(path)
            view = self._layout.view_of(path)
            if group is not None:
                if self._index_disagrees(path):
                    groups.setdefault(group, []).append(path)
                    continue
            elif view is not None:
                # Only a finished edit: a view read half-written would look like a person
                # deleting bullets, and every view dualmem writes is reconciled already.
                reconcile = partial(self._keeper().reconcile, *view, path.name)
                if (edited and self._files.view_signature(path) != signature_of(path)
                        and not self._guarded([path], reconcile, now)):
                    later[path] = True
                    continue
            elif path.parent == self._layout.episodes and GROUP_ID.fullmatch(path.name):
                groups[path.name] = []
                continue
            self._deferred.pop(path, None)
        for group, seen in groups.items():
            paths = seen or [self._layout.group_folder(group)]
            if not self._guarded(paths, partial(self._sync_group, group, unless_agree=seen), now):
                later.update((path, changes.get(path, False)) for path in paths)
        for listener in self.listeners:
            listener()
        return later

    def _with_views_of_new_folders(self, changes: dict[Path, bool]) -> dict[Path, bool]:
        """A view written into a group's new views folder before the watch on that folder began
        goes unheard (inotify watches a new folder only once told of it): look at each."""
        found = {path: True for folder in changes
                 if folder.parent == self._layout.views and GROUP_ID.fullmatch(folder.name)
                 for path in self._layout.pages_in(folder)}
        return changes | found if found else changes

    def _guarded(self, paths: Sequence[Path], change: Callable[[], object], now: float) -> bool:
        """Make ``change`` under the lock, reporting a failure as a problem of ``paths``. False,
        with nothing done, while another process holds the lock: it is most likely writing
        these very files, and they agree with the index once it is through. Paths that have
        waited the defer limit wait for the lock (a person's edit amid a stream of writes)."""
        waited = max(now - self._deferred.setdefault(path, now) for path in paths)
        try:
            with disk.held(self._guard.lock, wait=waited >= self._defer_limit) as free:
                if not free:
                    return False
                with self._guard.writing():
                    change()
        except disk.LockBusy:
            return False  # busy past the wait: nothing wrong with the files; the next batch
        except (DualmemError, OSError, sqlite3.Error) as exc:
            if not self._stopped:
                for path in paths:
                    self._files.report(path, str(exc))
        for path in paths:
            self._deferred.pop(path, None)
        return True

    def _index_disagrees(self, path: Path) -> bool:
        """The episode file at ``path`` is not what the index says it is (new, changed, gone,
        or written by a process that has yet to record it: the lock then waits for it)."""
        return self._files.signature_at(path) != signature_of(path)

    def _sync_group(self, group: str, *, unless_agree: Sequence[Path] = ()) -> None:
        """Make the index hold exactly the readable episode files of ``group`` (under the lock):
        new and changed files are read, vanished ones dropped. Views of the kinds that changed
        are rendered again. Nothing is done when the index agrees by now with every file in
        ``unless_agree`` (their writers committed while this waited for the lock)."""
        if unless_agree and not any(map(self._index_disagrees, unless_agree)):
            return
        folder = self._layout.group_folder(group)
        if folder.is_symlink():  # it could lead out of the home: nothing in it is read
            self._files.report(folder, "is a symbolic link; not read")
            return
        before = mtime(folder)
        on_disk: dict[str, os.DirEntry[str]] = {}
        if before is not None:
            with os.scandir(folder) as entries:
                on_disk = {e.name: e for e in entries if is_episode_name(e.name)}
        known = {file_name(i): (i, s) for i, s in self._files.in_group(group).items()}
        problems = self._files.problems_in(folder)
        gone = [known[name][0] for name in known.keys() - on_disk.keys()]
        for name in problems - on_disk.keys():
            self._files.clear_problem(folder / name)
        rows: list[Row] = []
        for name, entry in sorted(on_disk.items()):
            stored = known.get(name)
            if stored is not None and stored[1] == _entry_signature(entry):
                continue
            row = self._read(folder / name)
            if row is None:
                if stored is not None:
                    gone.append(stored[0])
            else:
                rows.append(row)
        # Where the rows stood (a copy in another group taken in moves its memory) and stand.
        touched = self._kinds_of([*gone, *(r.episode.id for r in rows)])
        touched |= {(r.episode.group_id, r.episode.kind) for r in rows}
        with self._index.transaction():
            self._index.drop(gone)
            self._index.put(rows)
            self._files.record_folder(folder, before, time.time_ns())
        if touched:  # a folder re-checked (its mtime was too recent to trust) may hold no change
            self._keeper().render(touched, drop=set(gone))

    def _read(self, path: Path) -> Row | None:
        """The episode file at ``path`` as an index row, or None (reported) when it is not one."""
        try:
            # Its folder is no link (checked by the caller, once): the file need not be either.
            data, status = read_regular_status(path, limit=FILE_LIMIT, follow=False)
        except FileNotFoundError:
            return None
        except FileRefused as exc:
            self._files.report(path, f"{exc.reason}; not read")
            return None
        except OSError as exc:
            self._files.report(path, f"cannot be read: {exc.strerror or exc}")
            return None
        sig = signature(status)
        try:
            episode = codec.decode(data)
        except codec.UnreadableEpisode as exc:
            self._files.report(path, str(exc))
            return None
        if (path.parent.name, path.name) != (episode.group_id, file_name(episode.id)):
            expected = self._layout.episode_path(episode.group_id, episode.id)
            self._files.report(path, f"holds episode {episode.id}, which belongs at {expected}")
            return None
        where = self._index.located(episode.id)
        if where is not None and where[0] != episode.group_id:
            other = self._layout.episode_path(where[0], episode.id)
            if (other_status := _status(other)) is not None:
                # Two copies: a move cut short (a writer killed), or a person's copy. The later
                # written stands, whichever folder is read first (a catch-up, a rebuild).
                if _written_later((other_status, where[0]), (status, episode.group_id)):
                    self._files.report(path, f"episode {episode.id} is stored in group "
                                             f"{where[0]} too, written later there")
                    return None
                self._files.report(other, f"episode {episode.id} is stored in group "
                                          f"{episode.group_id} too, written later there")
        self._files.clear_problem(path)
        return Row.of(episode, sig)

    def _kinds_of(self, episode_ids: Iterable[str]) -> set[tuple[str, str]]:
        return {(where[0], where[1]) for i in episode_ids
                if (where := self._index.located(i)) is not None}


def _status(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _written_later(one: tuple[os.stat_result, str], other: tuple[os.stat_result, str]) -> bool:
    """Was the first (file status, group) written after the second? The group breaks a tie."""
    return (one[0].st_mtime_ns, one[1]) > (other[0].st_mtime_ns, other[1])


def _entry_signature(entry: os.DirEntry[str]) -> str | None:
    try:
        return signature(entry.stat())
    except FileNotFoundError:
        return None
