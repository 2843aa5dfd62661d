"""The file layer: a ``MemoryBackend`` over a folder of JSON episodes and Markdown views.

The files are the truth (FORMAT.md). ``index.sqlite3`` beside them is a derived cache that every
process shares: opening checks it against the folders' modification times and the views'
signatures and re-reads only what changed, so an open costs milliseconds whatever the size.
Writers take one cross-process lock, write the files, then the index, then the views the change
touches; readers never take the lock. A watcher takes in changes made by hand (or by a writer
that died between its files and the index) while a process runs.

This class is the protocol; its collaborators do the work: ``EpisodeWriter`` (writes, under
``WriteGuard``), ``Intake`` (changes found on disk), ``ViewKeeper`` (the Markdown views, with
``PageEdits`` taking in what people change in them).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from backends.errors import (
    OUT_OF_RESOURCES,
    BackendUnavailable,
    FileRefused,
    WriteFailed,
    out_of_resources,
)
from backends.model import (
    DEFAULT_MAX_BODY_BYTES,
    EPISODE_ID,
    Episode,
    Hit,
    Receipt,
    check_filters,
)
from backends.protocol import Changes, Position, SetAside, Tombstone
from backends.safe_files import refuse_links_in
from fallback import disk
from fallback.append import validated
from fallback.blocking import blocking
from fallback.guard import WriteGuard
from fallback.held import HeldFolder
from fallback.index import FileIndex
from fallback.index_search import as_set, search_index
from fallback.intake import Intake
from fallback.layout import Layout
from fallback.lock import LOCK_POLL, LOCK_TIMEOUT, FolderLock
from fallback.parts import Parts
from fallback.tombstones import TombstoneFolder

if TYPE_CHECKING:
    from fallback.keeper import ViewKeeper
    from fallback.writer import EpisodeWriter

REFUSED = "refused"
"""the reason the layer is unavailable when its folder is, or holds, a symbolic link"""
DEFER_LIMIT = 2.0
"""seconds a change seen by the watcher waits for the lock to be free before it waits for it"""


class FileBackend:
    layer = "file"
    views_keeper: type[ViewKeeper] | None = None
    """who keeps the views: ``ViewKeeper`` (the view tests' oracle renders every page whole)"""

    def __init__(self, layout: Layout, index: FileIndex, max_body_bytes: int) -> None:
        """Use ``await FileBackend.open(...)``, which also checks the index and starts watching."""
        self._layout = layout
        self._index = index
        self._max_body_bytes = max_body_bytes
        self._lock = FolderLock(layout.lock, timeout=LOCK_TIMEOUT, poll=LOCK_POLL)
        self._tombstones = TombstoneFolder(layout.root)
        self._held = HeldFolder(layout.root)
        self._guard = WriteGuard(layout, index, self._lock, self._tombstones.folder)
        self._parts = Parts(layout, index, self._guard, self._held, self._tombstones)
        self._intake = Intake(self._parts, lambda: self._keeper, DEFER_LIMIT)
        self._closed = False

    # Made on first use: a one-shot read, which changes no view, never imports their modules.
    @cached_property
    def _keeper(self) -> ViewKeeper:
        from fallback.keeper import ViewKeeper
        from fallback.page_edits import PageEdits

        keeper = self.views_keeper or ViewKeeper
        return keeper(self._parts, PageEdits(self._parts, self._max_body_bytes))

    @cached_property
    def _writer(self) -> EpisodeWriter:
        try:
            from fallback.writer import EpisodeWriter

            keeper = self._keeper
        except OSError as exc:  # an import needs a file handle too: none left (``ulimit -n``)
            raise WriteFailed(f"cannot write in {self._layout.root}: "
                              f"{exc.strerror or exc}") from exc
        return EpisodeWriter(self._parts, keeper)

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
            await blocking(backend._intake.start, fresh=fresh, watch=watch)
        except WriteFailed as exc:
            # A full disk, say: what the open would have written can wait; reads cannot.
            await backend.aclose()
            if isinstance(cause := exc.__cause__, OSError) and _lacks_handles(cause):
                raise _unavailable(root, cause) from exc  # then no read could be served either
            backend = cls._read_only_backend(backend._layout, max_body_bytes, str(exc))
            await blocking(backend._intake.start, fresh=True, watch=False)
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
        backend._guard.read_only = why
        return backend

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (from the watcher's thread) each time a change on disk, by this
        process or another, may have reached the index: what it reads is current then."""
        self._intake.listeners.append(listener)

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
        return self._index.files.problems()

    # -- the protocol -----------------------------------------------------------------------

    async def upsert(self, episode: Episode) -> Receipt:
        return (await self.upsert_many([episode]))[0]

    async def upsert_many(self, episodes: Sequence[Episode]) -> list[Receipt]:
        """``upsert`` of each episode in order, the last of one id winning, under one hold of the
        lock: each view the batch touches is rendered once and each folder synced once. Every
        episode is checked before anything is written."""
        self._check_open()
        checked = [validated(episode, self._max_body_bytes) for episode in episodes]
        stored = list({episode.id: episode for episode in checked}.values())
        await blocking(self._writer.store, stored)
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
        return await blocking(self._writer.remove, episode_id)

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
        for episode in self._index.select(as_set(group_ids), as_set(kinds)):
            yield episode

    async def newest(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        """``backends.protocol.ReadsNewest``: the index's order, reversed."""
        self._check_open()
        check_filters(group_ids, kinds)
        for episode in self._index.select(as_set(group_ids), as_set(kinds), newest_first=True):
            yield episode

    async def count(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> int:
        self._check_open()
        check_filters(group_ids, kinds)
        return self._index.count(as_set(group_ids), as_set(kinds))

    async def ids_starting(self, prefix: str, *,
                           group_ids: Sequence[str] | None = None) -> list[str]:
        """``backends.protocol.FindsIds``."""
        self._check_open()
        check_filters(group_ids, None)
        return self._index.ids_starting(prefix, as_set(group_ids))

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._intake.stop()
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
        return await blocking(self._writer.restore, episode_id)

    async def purge(self, episode_ids: Collection[str]) -> list[str]:
        """``backends.protocol.Purges``: these memories' text out of every file of the layer."""
        self._check_open()
        ids = [i for i in episode_ids if EPISODE_ID.fullmatch(i)]
        from fallback.purge import Purger  # a rare operation: no other call loads it

        return await blocking(Purger(self._parts, self._writer).purge, ids)

    # -- opening and watching ---------------------------------------------------------------

    async def watch(self) -> None:
        """Start watching, if not yet (``open(watch=False)``), and take in what changed on disk
        meanwhile. The dual store has only the graph's holder watch: every process's watcher
        costs about a millisecond of CPU for each write of every other process."""
        self._check_open()
        if not self._intake.watching and self._guard.read_only is None:
            try:
                await blocking(self._intake.start, fresh=False, watch=True)
            except OSError as exc:
                raise _unavailable(self._layout.root, exc) from exc

    def _check_open(self) -> None:
        if self._closed:
            raise BackendUnavailable(self.layer, "closed")


def _lacks_handles(exc: OSError) -> bool:
    """Whether ``exc`` says this process has no file handle left (``ulimit -n``)."""
    return exc.errno in (errno.EMFILE, errno.ENFILE)


def _unavailable(root: str | os.PathLike[str], exc: OSError) -> BackendUnavailable:
    reason = OUT_OF_RESOURCES if out_of_resources(exc) else "cannot use its folder"
    return BackendUnavailable("file", reason, f"{root}: {exc.strerror or exc}")
