"""The file layer: a ``MemoryBackend`` over a folder of JSON episodes and Markdown views.

The files are the truth (FORMAT.md). ``index.sqlite3`` beside them is a derived cache that every
process shares: opening checks it against the folders' modification times and the views'
signatures and re-reads only what changed, so an open costs milliseconds whatever the size.
Writers take one cross-process lock, write the files, then the index, then the views the change
touches; readers never take the lock. A watcher takes in changes made by hand (or by a writer
that died between its files and the index) while a process runs.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import sqlite3
import time
from collections.abc import (
    AsyncIterator,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from backends.errors import (
    OUT_OF_RESOURCES,
    BackendUnavailable,
    DualmemError,
    FileRefused,
    InvalidEpisode,
    StoreCorrupt,
    WriteFailed,
    out_of_resources,
)
from backends.model import (
    DEFAULT_MAX_BODY_BYTES,
    EPISODE_ID,
    GROUP_ID,
    Episode,
    Hit,
    Receipt,
    check_filters,
    ensure_body_fits,
    now,
)
from backends.protocol import Changes, Position, SetAside, Tombstone
from backends.safe_files import read_regular_status, refuse_links_in
from backends.search.expansion import current_first, fuse
from fallback import codec, disk, views
from fallback.blocking import blocking
from fallback.held import HeldFolder
from fallback.index import FileIndex, Row, Signature, ViewEntry, signature
from fallback.layout import VIEW_FILES, Layout, file_name, is_episode_name, page_name
from fallback.lock import FolderLock
from fallback.tombstones import TombstoneFolder

if TYPE_CHECKING:
    import logging

    from fallback.watch import Watcher


def _log() -> logging.Logger:
    import logging  # only a rare event logs; the import is ~10 ms of every one-shot command

    return logging.getLogger(__name__)


_ViewRead = tuple[str | None, Signature | None]  # a view's text and signature; None when missing
_Key = tuple[str, str]
"""(created_at key, id): a bullet's place in its view's order"""
_Bounds = tuple[_Key | None, _Key | None]
"""a page's first key (None: the first page) and the next page's (None: the last page)"""

LOCK_TIMEOUT = 20.0
# Writes hold the lock for about a millisecond; the default 50 ms poll would idle most waits.
LOCK_POLL = 0.001
_MAX_SPLICED = 8  # a larger batch renders each view it touches once instead
MASS_CHANGE = 2
"""hand bullets taken out of a view in one save from which none is forgotten, but held"""
_MAX_ROUNDS = 16
"""renders of a page a person keeps saving meanwhile, before it is left as it is (reported)"""
REFUSED = "refused"
"""the reason the layer is unavailable when its folder is, or holds, a symbolic link"""
FILE_LIMIT = 1 << 30
"""the most of one episode file or view that is read: far over any memory a write takes or
view a person keeps"""
DEFER_LIMIT = 2.0
"""seconds a change seen by the watcher waits for the lock to be free before it waits for it"""


class FileBackend:
    layer = "file"

    def __init__(self, layout: Layout, index: FileIndex, max_body_bytes: int) -> None:
        """Use ``await FileBackend.open(...)``, which also checks the index and starts watching."""
        self._layout = layout
        self._index = index
        self._max_body_bytes = max_body_bytes
        self._lock = FolderLock(layout.lock, timeout=LOCK_TIMEOUT, poll=LOCK_POLL)
        self._watcher: Watcher | None = None
        self._tombstones = TombstoneFolder(layout.root)
        self._held = HeldFolder(layout.root)
        self._listeners: list[Callable[[], None]] = []
        self._deferred: dict[Path, float] = {}
        """changes the watcher has put off while the lock was busy -> when first seen"""
        self._read_only: str | None = None
        """why this home cannot be written, or None"""
        self._swept = False
        self._closed = False

    @classmethod
    async def open(
        cls,
        root: str | os.PathLike[str],
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        watch: bool = True,
    ) -> FileBackend:
        """Open (creating when needed) the file layer in folder ``root``. Unreadable files do not
        stop it: they are listed in ``problems`` and left as they are. ``watch=False`` skips the
        watcher (a one-shot command: changes made later by others reach its next open)."""
        backend, fresh = await blocking(cls._prepare, Path(root), max_body_bytes)
        try:
            await blocking(backend._start, fresh=fresh, watch=watch)
        except WriteFailed as exc:
            # A full disk, say: what the open would have written can wait; reads cannot.
            await backend.aclose()
            backend = cls._read_only_backend(backend._layout, max_body_bytes, str(exc))
            await blocking(backend._start, fresh=True, watch=False)
        except OSError as exc:  # no file handle left for the watcher, say (``ulimit -n``)
            await backend.aclose()
            raise _unavailable(root, exc) from exc
        except BaseException:
            await backend.aclose()
            raise
        return backend

    @classmethod
    def _prepare(cls, root: Path, max_body_bytes: int) -> tuple[FileBackend, bool]:
        layout = Layout(root.absolute())
        try:
            # What is in the folder is the layer's alone: a link there could only lead out of
            # the home (SQLite follows one to the index or its journals; the lock, the history).
            refuse_links_in(layout.root)
        except FileRefused as exc:
            raise BackendUnavailable("file", REFUSED, str(exc)) from exc
        try:
            for folder in (layout.root, layout.episodes, layout.views):
                disk.make_folder(folder)
            index, fresh = FileIndex.open(layout.root)
            return cls(layout, index, max_body_bytes), fresh
        except (WriteFailed, sqlite3.Error, OSError) as exc:
            if not layout.episodes.is_dir():
                raise BackendUnavailable("file", "cannot use its folder", f"{root}: {exc}") from exc
            why = str(exc)
        return cls._read_only_backend(layout, max_body_bytes, why), True

    @classmethod
    def _read_only_backend(cls, layout: Layout, max_body_bytes: int, why: str) -> FileBackend:
        """A home we cannot write (a read-only mount, a shared checkout, a full disk): reads
        work from an index built in memory; every write says why it cannot be made."""
        index, _ = FileIndex.open(layout.root, writable=False)
        backend = cls(layout, index, max_body_bytes)
        backend._read_only = why
        return backend

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (from the watcher's thread) each time a change on disk, by this
        process or another, may have reached the index: what it reads is current then."""
        self._listeners.append(listener)

    def location(self, episode: Episode) -> str:
        """The file of ``episode`` (``backends.protocol.Locates``)."""
        return str(self._layout.episode_path(episode.group_id, episode.id))

    @property
    def history_file(self) -> Path:
        """Where the graph's holder keeps the facts rewrites retired (the journal holds each
        memory's latest version only): beside the memories, so a rebuilt graph gets them back."""
        return self._layout.history

    @property
    def enriched_file(self) -> Path:
        """Where the graph's holder keeps what graphiti's LLM extraction found, for the same
        reason: a rebuilt graph gets it back without asking the LLM again."""
        return self._layout.enriched

    @property
    def problems(self) -> list[tuple[Path, str]]:
        """Files that could not be read or used, with the reason, for ``status`` to show."""
        return self._index.problems()

    # -- the protocol -----------------------------------------------------------------------

    async def upsert(self, episode: Episode) -> Receipt:
        return (await self.upsert_many([episode]))[0]

    async def upsert_many(self, episodes: Sequence[Episode]) -> list[Receipt]:
        """``upsert`` of each episode in order, the last of one id winning, under one hold of the
        lock: each view the batch touches is rendered once and each folder synced once. Every
        episode is checked before anything is written."""
        self._check_open()
        checked = [_validated(episode, self._max_body_bytes) for episode in episodes]
        stored = list({episode.id: episode for episode in checked}.values())
        await blocking(self._store, stored)
        return [Receipt(id=e.id, layer=self.layer,
                        location=str(self._layout.episode_path(e.group_id, e.id)))
                for e in checked]

    async def get(self, episode_id: str) -> Episode | None:
        self._check_open()
        return self._index.get(episode_id) if EPISODE_ID.fullmatch(episode_id) else None

    async def delete(self, episode_id: str) -> bool:
        self._check_open()
        if not EPISODE_ID.fullmatch(episode_id):
            return False  # no such id can be stored, so it is missing
        return await blocking(self._remove, episode_id)

    async def search(
        self,
        query: str,
        *,
        group_ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 10,
    ) -> list[Hit]:
        """The protocol's search, as the graph's (``backends.search.expansion``): lexical, joined by
        the memories that name an entity the query names or one valid fact away from it; what
        is superseded ranks below what is current."""
        self._check_open()
        return search_index(self._index, query, group_ids=group_ids, kinds=kinds, limit=limit,
                            layer=self.layer)

    async def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        self._check_open()
        check_filters(group_ids, kinds)
        for episode in self._index.select(_as_set(group_ids), _as_set(kinds)):
            yield episode

    async def count(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> int:
        self._check_open()
        check_filters(group_ids, kinds)
        return self._index.count(_as_set(group_ids), _as_set(kinds))

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._watcher is not None:
            await blocking(self._watcher.stop)
        self._index.close()
        self._lock.close()

    # -- the journal (backends.protocol.Journal) --------------------------------------------

    def position(self) -> Position:
        self._check_open()
        return self._index.position()

    def changes_since(self, position: Position | None, limit: int = 5000) -> Changes:
        self._check_open()
        return self._index.changes_since(position, limit)

    def content_hashes(self) -> dict[str, str]:
        """id -> content hash of every episode, from the index (no file is read)."""
        self._check_open()
        return self._index.hashes()

    def deleted_ids(self) -> set[str]:
        """Ids this layer has deleted (and not stored again): recorded in the index, and as
        tombstones not yet forgotten."""
        self._check_open()
        return self._index.deleted() | {tomb.id for tomb in self._tombstones.read()}

    # -- tombstones (backends.protocol.Tombstones): deletes kept for the migrator -----------

    async def bury(self, episode_ids: Collection[str]) -> None:
        self._check_open()
        self._tombstones.bury(episode_ids)

    async def tombstones(self) -> AsyncIterator[Tombstone]:
        self._check_open()
        for tombstone in self._tombstones.read():
            yield tombstone

    async def forget_tombstones(self, episode_ids: Collection[str]) -> None:
        self._check_open()
        self._tombstones.forget(episode_ids)

    # -- what people took out of the views (backends.protocol.Restores) ---------------------

    def set_aside(self) -> list[SetAside]:
        self._check_open()
        held = [SetAside(episode, since, held=True)
                for ids in self._held.every().values() for episode_id, since in ids.items()
                if (episode := self._index.get(episode_id)) is not None]
        forgotten = [SetAside(episode, when, held=False)
                     for when, episode in self._tombstones.forgotten()
                     if self._index.located(episode.id) is None]
        return sorted(held, key=lambda aside: aside.since, reverse=True) + forgotten

    async def restore(self, episode_id: str) -> Episode | None:
        self._check_open()
        if not EPISODE_ID.fullmatch(episode_id):
            return None
        return await blocking(self._restore, episode_id)

    def _restore(self, episode_id: str) -> Episode | None:
        with self._writing():
            where = self._index.located(episode_id)
            if where is not None:
                group, kind = where[0], where[1]
                if episode_id not in self._held.ids(group, kind):
                    return None
                self._held.release(group, kind, [episode_id])
                self._write_view(group, kind, VIEW_FILES[kind], bounds=_Pages(
                    kind, self._index.page_starts(group, kind)).bounds(0))
                return self._index.get(episode_id)
        kept = next((e for _, e in self._tombstones.forgotten() if e.id == episode_id), None)
        if kept is None:
            return None
        self._store([kept])
        self._tombstones.remove([episode_id])
        return kept

    # -- opening and watching ---------------------------------------------------------------

    async def watch(self) -> None:
        """Start watching, if not yet (``open(watch=False)``), and take in what changed on disk
        meanwhile. The dual store has only the graph's holder watch: every process's watcher
        costs about a millisecond of CPU for each write of every other process."""
        self._check_open()
        if self._watcher is None and self._read_only is None:
            try:
                await blocking(self._start, fresh=False, watch=True)
            except OSError as exc:
                raise _unavailable(self._layout.root, exc) from exc

    def _start(self, *, fresh: bool, watch: bool) -> None:
        # Watch first, then check: a change made while checking is seen by one or the other.
        if watch:
            self._sweep()
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

    def _sweep(self) -> None:
        """Remove the temp files of dead writers, once, in a process that watches or writes: the
        scan of every group folder is a one-shot read's (a hook's, a search's) to skip."""
        if not self._swept:
            self._swept = True
            disk.remove_dead_writers_temps([*self._layout.group_folders(),
                                            self._tombstones.folder])

    def _catch_up(self, *, everything: bool = False) -> None:
        """Bring the index up to date with the disk: re-read the group folders whose mtime
        moved (or all of them), reconcile the views whose signature did and render again the
        views of which a page we wrote is gone. Takes the lock only when something moved, so an
        open of an unchanged home writes nothing."""
        stale = self._stale_groups(everything)
        on_disk = self._layout.view_paths()
        edited = [view for view in on_disk
                  if everything or self._index.view_signature(view) != _signature_of(view)]
        lost = {group_kind for path in set(self._index.views()) - set(on_disk)
                if (group_kind := self._layout.view_of(path)) is not None}
        if not stale and not edited and not lost:
            return
        if self._read_only is not None:
            with self._index.transaction():  # what the files hold; nothing is written to them
                for group in stale:
                    self._sync_group(group)
            return
        with self._writing():
            for group in stale:
                self._sync_group(group)
            for view in edited:
                group_kind = self._layout.view_of(view)
                if group_kind is not None:
                    try:
                        self._reconcile(*group_kind, view.name)
                    except StoreCorrupt as exc:  # one view we cannot read holds up no other
                        self._index.report(view, exc.detail)
            self._render(lost)

    def _stale_groups(self, everything: bool) -> list[str]:
        on_disk = set(self._layout.groups())
        recorded = {folder.name for folder in self._index.folders()}
        stale = {group for group in recorded - on_disk if GROUP_ID.fullmatch(group)}
        for group in on_disk:
            folder = self._layout.group_folder(group)
            if everything or self._index.folder_mtime(folder) != _mtime(folder):
                stale.add(group)
        return sorted(stale)

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
                if (edited and self._index.view_signature(path) != _signature_of(path)
                        and not self._guarded([path], partial(self._reconcile, *view, path.name),
                                              now)):
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
        for listener in self._listeners:
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
        waited ``DEFER_LIMIT`` wait for the lock (a person's edit amid a stream of writes)."""
        waited = max(now - self._deferred.setdefault(path, now) for path in paths)
        try:
            with disk.held(self._lock, wait=waited >= DEFER_LIMIT) as free:
                if not free:
                    return False
                with self._writing():
                    change()
        except disk.LockBusy:
            return False  # busy past the wait: nothing wrong with the files; the next batch
        except (DualmemError, OSError, sqlite3.Error) as exc:
            if not self._closed:
                for path in paths:
                    self._index.report(path, str(exc))
        for path in paths:
            self._deferred.pop(path, None)
        return True

    def _index_disagrees(self, path: Path) -> bool:
        """The episode file at ``path`` is not what the index says it is (new, changed, gone,
        or written by a process that has yet to record it: the lock then waits for it)."""
        return self._index.signature_at(path) != _signature_of(path)

    def _sync_group(self, group: str, *, unless_agree: Sequence[Path] = ()) -> None:
        """Make the index hold exactly the readable episode files of ``group`` (under the lock):
        new and changed files are read, vanished ones dropped. Views of the kinds that changed
        are rendered again. Nothing is done when the index agrees by now with every file in
        ``unless_agree`` (their writers committed while this waited for the lock)."""
        if unless_agree and not any(map(self._index_disagrees, unless_agree)):
            return
        folder = self._layout.group_folder(group)
        if folder.is_symlink():  # it could lead out of the home: nothing in it is read
            self._index.report(folder, "is a symbolic link; not read")
            return
        before = _mtime(folder)
        on_disk: dict[str, os.DirEntry[str]] = {}
        if before is not None:
            with os.scandir(folder) as entries:
                on_disk = {e.name: e for e in entries if is_episode_name(e.name)}
        known = {file_name(i): (i, s) for i, s in self._index.in_group(group).items()}
        problems = self._index.problems_in(folder)
        gone = [known[name][0] for name in known.keys() - on_disk.keys()]
        for name in problems - on_disk.keys():
            self._index.clear_problem(folder / name)
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
        touched = self._kinds_of(gone) | {(r.episode.group_id, r.episode.kind) for r in rows}
        with self._index.transaction():
            self._index.drop(gone)
            self._index.put(rows)
            self._index.record_folder(folder, before, time.time_ns())
        self._render(touched, drop=set(gone))

    def _read(self, path: Path) -> Row | None:
        """The episode file at ``path`` as an index row, or None (reported) when it is not one."""
        try:
            # Its folder is no link (checked by the caller, once): the file need not be either.
            data, status = read_regular_status(path, limit=FILE_LIMIT, follow=False)
        except FileNotFoundError:
            return None
        except FileRefused as exc:
            self._index.report(path, f"{exc.reason}; not read")
            return None
        except OSError as exc:
            self._index.report(path, f"cannot be read: {exc.strerror or exc}")
            return None
        sig = signature(status)
        try:
            episode = codec.decode(data)
        except codec.UnreadableEpisode as exc:
            self._index.report(path, str(exc))
            return None
        if (path.parent.name, path.name) != (episode.group_id, file_name(episode.id)):
            expected = self._layout.episode_path(episode.group_id, episode.id)
            self._index.report(path, f"holds episode {episode.id}, which belongs at {expected}")
            return None
        where = self._index.located(episode.id)
        if where is not None and where[0] != episode.group_id and self._layout.episode_path(
                where[0], episode.id).exists():
            self._index.report(path, f"episode {episode.id} is stored in group {where[0]} too")
            return None
        self._index.clear_problem(path)
        return _row(episode, sig)

    # -- writing, under the cross-process lock ----------------------------------------------

    @contextmanager
    def _writing(
        self,
        undo: list[Callable[[], object]] | None = None,
        after: list[Path] | None = None,
    ) -> Iterator[None]:
        """Hold the lock and one index transaction. Should anything fail before the index has
        committed (a full disk, say), ``undo`` puts back the files already changed, still under
        the lock: a write that raises leaves nothing that a later open would take in. Files in
        ``after`` (old copies of moved episodes) are removed only once the index has committed,
        since putting a removed file back can itself fail on a full disk."""
        self._check_writable()
        self._sweep()
        with disk.held(self._lock):
            try:
                with self._index.transaction():
                    yield
            except BaseException as exc:
                for action in reversed(undo or []):
                    with contextlib.suppress(WriteFailed, OSError):
                        action()
                if isinstance(exc, sqlite3.Error):
                    raise WriteFailed(
                        f"cannot update the index {self._index.path}: {exc}") from exc
                raise
            for path in after or []:
                try:
                    disk.remove(path)
                except WriteFailed as exc:  # the write stands; the leftover copy is reported
                    self._index.report(path, f"an older copy that could not be removed: {exc}")

    def _store(self, batch: list[Episode]) -> None:
        # Written and synced before the lock (the slow part, and nobody else's business);
        # under it, only renames, one sync per folder and the index.
        self._check_writable()
        staged: list[disk.Staged] = []
        undo: list[Callable[[], object]] = []
        leaving: list[Path] = []
        try:
            for e in batch:
                staged.append(disk.stage(self._layout.episode_path(e.group_id, e.id),
                                         codec.encode(e)))
            with self._writing(undo, after=leaving):
                self._take_in_first_pages({(e.group_id, e.kind) for e in batch})
                moved = [(e, where) for e in batch
                         if (where := self._index.located(e.id)) is not None]
                before = {e.id: self._index.view_entry(e.id) for e, _ in moved}
                was_hand = any(entry is not None and entry.hand for entry in before.values())
                touched = {(e.group_id, e.kind) for e in batch}
                touched |= {(where[0], where[1]) for _, where in moved}
                rows: list[Row] = []
                for episode, new in zip(batch, staged, strict=True):
                    undo.append(self._restorer(new.path, episode.id))
                    new.put()
                    rows.append(_row(episode, signature(new.status)))
                for episode, (old_group, _, _) in moved:
                    if old_group != episode.group_id:
                        leaving.append(self._layout.episode_path(old_group, episode.id))
                folders = {new.path.parent for new in staged}
                for folder in sorted(folders):
                    disk.sync_folder(folder)
                self._index.put(rows)
                self._record_folders(folders | {self._layout.group_folder(where[0])
                                                for _, where in moved})
                self._render(touched, changed=None if was_hand else [e.id for e in batch],
                             before=before)
        finally:
            for new in staged:
                new.discard()

    def _restorer(self, path: Path, episode_id: str) -> Callable[[], object]:
        """What puts ``path`` back as the index has it now: its stored episode, or nothing."""
        before = self._index.get(episode_id)
        where = self._index.located(episode_id)
        if before is None or where is None or self._layout.episode_path(where[0],
                                                                          episode_id) != path:
            return lambda: disk.remove(path)
        return lambda: disk.write_atomic(path, codec.encode(before))

    def _remove(self, episode_id: str) -> bool:
        undo: list[Callable[[], object]] = []
        with self._writing(undo):
            where = self._index.located(episode_id)
            if where is None:
                return False
            self._take_in_first_pages({(where[0], where[1])})
            where = self._index.located(episode_id)
            if where is None:  # the person had removed its bullet: forgotten just now
                return True
            path = self._layout.episode_path(where[0], episode_id)
            entry = self._index.view_entry(episode_id)
            # The tombstone first: it can fail (a full disk) while nothing is changed yet, and
            # one left by a delete that fails later names a live id, which is never replayed.
            # A hand bullet's keeps its text, which a person typed.
            kept = self._index.get(episode_id) if entry is not None and entry.hand else None
            self._tombstones.bury([episode_id], keep=[] if kept is None else [kept])
            self._held.release(where[0], where[1], [episode_id])
            # Old copies in other groups, left by a writer killed while moving this episode:
            # unindexed while this one stands, they would come back once it is gone.
            stale = [copy for group in self._layout.groups() if group != where[0]
                     if (copy := self._layout.episode_path(group, episode_id)).exists()]
            for copy in stale:
                disk.remove(copy)
                self._index.clear_problem(copy)
            undo.append(self._restorer(path, episode_id))
            disk.remove(path)
            self._index.drop([episode_id])
            self._record_folders({path.parent, *(copy.parent for copy in stale)})
            self._render({(where[0], where[1])}, drop={episode_id},
                         changed=None if entry is None or entry.hand else [episode_id],
                         before={episode_id: entry})
            return True

    def _record_folders(self, folders: Iterable[Path]) -> None:
        now = time.time_ns()
        for folder in folders:
            self._index.record_folder(folder, _mtime(folder), now)

    def _kinds_of(self, episode_ids: Iterable[str]) -> set[tuple[str, str]]:
        return {(where[0], where[1]) for i in episode_ids
                if (where := self._index.located(i)) is not None}

    def _take_in_first_pages(self, views_of: Iterable[tuple[str, str]]) -> None:
        """Before a write changes the views of ``views_of``: take in a first page a person
        changed since dualmem wrote it, so that the write's own change is never taken for
        theirs (a hand bullet stored now is not one they removed)."""
        for group, kind in views_of:
            if kind in VIEW_FILES:
                path = self._layout.view_path(group, kind)
                sig = _signature_of(path)
                if sig is not None and sig != self._index.view_signature(path):
                    self._reconcile(group, kind, VIEW_FILES[kind])

    def _reconcile(self, group: str, kind: str, page: str) -> None:
        """Take in what a person changed in page ``page`` of a view and render it again (under
        the lock). A page deleted meanwhile deletes nothing: it is rendered again later."""
        path = self._layout.view_path(group, kind, page)
        if not path.exists():
            self._index.record_view(path, None)
            return
        self._write_view(group, kind, page, forgets=True,
                         bounds=_Pages(kind, self._index.page_starts(group, kind)).find(page))

    def _take_in(self, group: str, kind: str, page: str, path: Path, text: str, *,
                 forgets: bool, drop: Collection[str]) -> tuple[str, set[str]]:
        """Take in ``text``, a person's version of page ``page``: a new hand bullet becomes an
        episode, a removed one is forgotten (a delete like any other, so the graph hears of
        it; its tombstone keeps the text). A save that takes out ``MASS_CHANGE`` or more at
        once forgets none: they are held (``fallback.held``), and an empty view is a missing
        one. Without ``forgets`` (a save met while a write renders), none is forgotten: they
        are held. Bullets of ``drop`` (being deleted) are not taken in. A generated bullet of
        another view (copied here) becomes a hand bullet. Returns
        the text to render from, and the hand bullets to move to the first page, where they
        live."""
        first = page == VIEW_FILES[kind]
        lines = views.parse(text)
        copied = {line.generated_id for line in lines if line.generated_id is not None
                  and (entry := self._index.view_entry(line.generated_id)) is not None
                  and (entry.group_id, entry.kind) != (group, kind)
                  and entry.bullet == line.raw.rstrip()}  # as shown there now, not a stale line
        if copied:
            text = views.adopt(text, copied)
            lines = views.parse(text)
        bullets = views.hand_ids(lines, group, kind)
        rejected, added = [], []
        for episode_id, bullet in bullets.items():
            if self._index.located(episode_id) is None and episode_id not in drop:
                try:
                    episode = views.hand_episode(group, kind, bullet)
                    ensure_body_fits(episode, self._max_body_bytes)
                except InvalidEpisode as exc:
                    rejected.append(f"bullet {bullet[:40]!r} is not a memory: {exc}")
                    continue
                status = disk.write_atomic(self._layout.episode_path(group, episode_id),
                                           codec.encode(episode))
                added.append(_row(episode, signature(status)))
        held = self._held.ids(group, kind)
        missing = [episode_id for episode_id, _, hand in self._index.bullets(group, kind)
                   if hand and episode_id not in bullets and episode_id not in held]
        removed: list[str] = []
        if first and missing and text.strip():
            if len(missing) >= MASS_CHANGE or not forgets:
                self._held.hold(group, kind, missing)
            else:
                removed = missing
        if held.keys() & bullets.keys():
            self._held.release(group, kind, held.keys() & bullets.keys())
        kept = [gone for i in removed if (gone := self._index.get(i)) is not None]
        self._tombstones.bury(removed, keep=kept)
        for episode_id in removed:
            disk.remove(self._layout.episode_path(group, episode_id))
        self._index.put(added)
        self._index.drop(removed)
        self._record_folders({self._layout.group_folder(group)})
        if rejected:
            self._index.report(path, "; ".join(rejected))
        else:
            self._index.clear_problem(path)
        moved = set() if first else {i for i in bullets if self._index.located(i) is not None}
        return text, moved

    def _render(
        self,
        touched: Iterable[tuple[str, str]],
        drop: Collection[str] = (),
        changed: Collection[str] | None = None,
        before: Mapping[str, ViewEntry | None] | None = None,
    ) -> None:
        """Render the views of ``touched``: every page, or, when only the episodes ``changed``
        (none of them hand-shaped before; ``before`` gives where they showed) changed, the
        pages they were and are on, by splicing their bullets where the page allows it. A
        bullet that starts a page, or did, renders its page and the one before whole."""
        touched = sorted((group, kind) for group, kind in touched if kind in VIEW_FILES)
        if self._read_only is not None or not touched:
            return
        if changed is not None and len(changed) > _MAX_SPLICED:
            changed = None
        now = {} if changed is None else {i: self._index.view_entry(i) for i in changed}
        for group, kind in touched:
            pages = _Pages(kind, self._index.page_starts(group, kind))
            if changed is None:
                self._write_pages(group, kind, pages, drop)
                continue
            is_here = _in_view(group, kind)
            mine = [(i, e) for i, e in [*now.items(), *(before or {}).items()] if is_here(e)]
            on = {0 if e.hand else pages.holding(e.created_at, i) for i, e in mine}
            # A bullet that starts a page takes the end of the page before it; one that no
            # longer does gives its page's bullets back to the page before it.
            on |= {pages.holding(e.created_at, i) - 1 for i, e in now.items()
                   if is_here(e) and e.starts}
            moving = any(e.starts for _, e in mine)
            for at in sorted(on):
                self._write_view(group, kind, pages.name(at), drop=drop,
                                 changed=None if moving else changed, bounds=pages.bounds(at))
            names = set(pages.names())
            gone = {page_name(kind, e.created_at, i) for i, e in (before or {}).items()
                    if is_here(e) and e.starts} - names
            for name in sorted(gone):
                self._write_view(group, kind, name, drop=drop, bounds=None)

    def _write_pages(self, group: str, kind: str, pages: _Pages, drop: Collection[str]) -> None:
        """Render every page of the view; a page file no longer in the view keeps only what
        people wrote in it, and goes when that is nothing but the title and rules we wrote."""
        names = pages.names()
        for at, name in enumerate(names):
            self._write_view(group, kind, name, drop=drop, bounds=pages.bounds(at))
        for path in self._layout.pages_in(self._layout.view_path(group, kind).parent):
            if path.name not in names and self._layout.view_of(path) == (group, kind):
                self._write_view(group, kind, path.name, drop=drop, bounds=None)

    def _write_view(
        self,
        group: str,
        kind: str,
        page: str,
        *,
        drop: Collection[str] = (),
        changed: Collection[str] | None = None,
        bounds: _Bounds | None,
        forgets: bool = False,
    ) -> None:
        """Render page ``page`` of the view from the index: the bullets within ``bounds``
        (None: a page no longer in the view, which shows none). A page a person changed since
        dualmem last wrote it is taken in first (``_take_in``); one saved while this renders
        is never overwritten unread (``disk.replace_unless_changed``): it is taken in, and the
        page rendered again (``forgets``: a person's removals may forget, else they hold). With
        ``changed``, a page as we last wrote it is spliced instead (``views.splice``)."""
        path = self._layout.view_path(group, kind, page)
        drop, moved = set(drop), set[str]()
        try:
            existing, sig = on_disk, _ = self._read_view(path)
            unseen = existing is not None and sig != self._index.view_signature(path)
            met = False  # a save met while rendering: what it lacks is held, not forgotten
            for _ in range(_MAX_ROUNDS):
                if unseen and existing is not None:
                    existing, more = self._take_in(group, kind, page, path, existing,
                                                   forgets=forgets and not met, drop=drop)
                    moved |= more
                    drop |= more
                    changed = None
                rendered = None
                if changed is not None and existing is not None and bounds is not None:
                    rendered = self._spliced(existing, group, kind, changed, bounds)
                if rendered is None:
                    shown = [] if bounds is None else self._shown(group, kind, bounds)
                    rendered = views.render(existing, group, kind, shown, drop, page)
                if bounds is None and rendered == views.render(None, group, kind, [], name=page):
                    if on_disk is not None:
                        disk.remove(path)
                        disk.sync_folder(path.parent)
                    sig = None
                    break
                if rendered == on_disk:
                    break
                swap = disk.replace_unless_changed(path, rendered.encode(),
                                                   partial(_is_file_of, sig))
                if swap.found is not None:  # a person's save that is here alone now
                    _, more = self._take_in(group, kind, page, path, self._displaced(
                        path, swap.found), forgets=False, drop=drop)
                    moved |= more
                    drop |= more
                if swap.status is not None:
                    sig = signature(swap.status)
                    break
                # Someone's file stands there now: take that in, and render again.
                existing, sig = on_disk, _ = self._read_view(path)
                unseen, changed, met = existing is not None, None, True
            else:
                raise StoreCorrupt(path, "changed each time it was rendered; left as it is")
            self._index.record_view(path, sig)
        except StoreCorrupt as exc:
            self._index.report(path, exc.detail)  # a person's file we cannot read: leave it be
        if moved:
            self._write_view(group, kind, VIEW_FILES[kind],
                             bounds=_Pages(kind, self._index.page_starts(group, kind)).bounds(0))

    def _displaced(self, path: Path, found: bytes) -> str:
        """The text of a person's save that a render displaced and could not put back."""
        try:
            return found.decode()
        except UnicodeDecodeError:
            raise StoreCorrupt(path, "a save displaced while rendered is not UTF-8 text; "
                               "it is lost") from None

    def _shown(self, group: str, kind: str, bounds: _Bounds) -> list[tuple[str, str]]:
        """(id, bullet) of the page of ``bounds``, less the hand bullets held back."""
        shown = self._index.page_bullets(group, kind, *bounds)
        if bounds[0] is not None:
            return shown
        held = self._held.ids(group, kind)
        return [(i, line) for i, line in shown if i not in held] if held else shown

    def _spliced(self, text: str, group: str, kind: str, changed: Collection[str],
                 bounds: _Bounds) -> str | None:
        """``text`` with the bullets of ``changed`` on the page of ``bounds`` as the index has
        them now, or None."""
        if bounds[0] is None and self._index.has_hand(group, kind):
            return None  # hand bullets move between a view's parts as it is rendered: render
        spliced: str | None = text
        for episode_id in changed:
            entry = self._index.view_entry(episode_id)
            line = before = after = None
            if (entry is not None and (entry.group_id, entry.kind) == (group, kind)
                    and (_within(bounds, (entry.created_at, episode_id)) if not entry.hand
                         else bounds[0] is None)):
                line = entry.bullet
                after, before = self._index.neighbours(group, kind, entry.created_at,
                                                       episode_id)
            spliced = views.splice(text, episode_id, line, before=before, after=after)
            if spliced is None:
                return None
            text = spliced
        return spliced

    def _read_view(self, path: Path) -> _ViewRead:
        try:
            # Never through a link, nor out of the home through a linked folder: a person's
            # view elsewhere would be copied in, and its bullets served as memories.
            data, status = read_regular_status(path, limit=FILE_LIMIT, follow=False,
                                               within=self._layout.root)
        except FileNotFoundError:
            return None, None
        except FileRefused as exc:
            raise StoreCorrupt(path, f"{exc.reason}; left as it is, not read") from None
        sig = signature(status)
        try:
            return data.decode(), sig
        except UnicodeDecodeError:
            raise StoreCorrupt(path, "not UTF-8 text; left as it is") from None

    def _check_writable(self) -> None:
        if self._read_only is not None:
            raise WriteFailed(f"cannot write in {self._layout.root}: {self._read_only}")

    def _check_open(self) -> None:
        if self._closed:
            raise BackendUnavailable(self.layer, "closed")


def _row(episode: Episode, sig: Signature) -> Row:
    shown = episode.kind in VIEW_FILES
    hand = shown and views.is_hand_shaped(episode)
    return Row(episode, sig, episode.content_hash(), views.bullet(episode) if shown else None,
               hand, shown and not hand and views.starts_page(episode.id))


class _Pages:
    """The pages of one view: the first, then one per bullet that starts a page."""

    def __init__(self, kind: str, starts: list[_Key]) -> None:
        self._kind = kind
        self._starts = starts

    def __len__(self) -> int:
        return len(self._starts) + 1

    def holding(self, created_at: str, episode_id: str) -> int:
        """The page the bullet of this place in the order is on."""
        return bisect.bisect_right(self._starts, (created_at, episode_id))

    def name(self, at: int) -> str:
        return VIEW_FILES[self._kind] if at == 0 else page_name(self._kind, *self._starts[at - 1])

    def names(self) -> list[str]:
        """The file names of the pages, in order."""
        return [self.name(at) for at in range(len(self))]

    def find(self, name: str) -> _Bounds | None:
        """The bounds of the page of file name ``name``; None when it is none of this view's."""
        names = self.names()
        return self.bounds(names.index(name)) if name in names else None

    def bounds(self, at: int) -> _Bounds:
        return (None if at == 0 else self._starts[at - 1],
                self._starts[at] if at < len(self._starts) else None)


def _in_view(group: str, kind: str) -> Callable[[ViewEntry | None], TypeGuard[ViewEntry]]:
    def is_here(entry: ViewEntry | None) -> TypeGuard[ViewEntry]:
        return entry is not None and (entry.group_id, entry.kind) == (group, kind)

    return is_here


def _within(bounds: _Bounds, key: _Key) -> bool:
    start, end = bounds
    return (start is None or start <= key) and (end is None or key < end)


def _validated(episode: Episode, max_body_bytes: int) -> Episode:
    """Check the episode again: one built with ``model_construct`` skipped the model's rules,
    and file paths are made from its fields."""
    checked = Episode.parse(**{name: getattr(episode, name, None) for name in Episode.model_fields})
    ensure_body_fits(checked, max_body_bytes)
    return checked


def _is_file_of(sig: Signature | None, status: os.stat_result | None) -> bool:
    """Whether ``status`` is of the file whose signature is ``sig`` (None: no file)."""
    return (None if status is None else signature(status)) == sig


def _mtime(folder: Path) -> int | None:
    try:
        return os.stat(folder).st_mtime_ns
    except FileNotFoundError:
        return None


def _signature_of(path: Path) -> Signature | None:
    try:
        return signature(path.stat())
    except FileNotFoundError:
        return None


def _entry_signature(entry: os.DirEntry[str]) -> Signature | None:
    try:
        return signature(entry.stat())
    except FileNotFoundError:
        return None


def search_index(index: FileIndex, query: str, *, group_ids: Sequence[str] | None,
                 kinds: Sequence[str] | None, limit: int, layer: str) -> list[Hit]:
    """``FileBackend.search`` over ``index`` (any index of this layout: the journal's, or a
    copy of a server graph's memories)."""
    groups, wanted = _as_set(group_ids), _as_set(kinds)
    found = {episode.id: (episode, score)
             for episode, score in index.search(query, groups, wanted, limit)}
    links = index.linked(query, groups, wanted) if limit > 0 else {}
    ranked = []
    for key, score in fuse(((k, s) for k, (_, s) in found.items()), links, limit):
        episode = found[key][0] if key in found else index.get(key)
        if episode is not None:
            ranked.append((episode, score))
    return [Hit(episode=episode, score=score, layer=layer)
            for episode, score in current_first(ranked, now())]


def _as_set(values: Sequence[str] | None) -> set[str] | None:
    return None if values is None else set(values)


def _unavailable(root: str | os.PathLike[str], exc: OSError) -> BackendUnavailable:
    reason = OUT_OF_RESOURCES if out_of_resources(exc) else "cannot use its folder"
    return BackendUnavailable("file", reason, f"{root}: {exc.strerror or exc}")
