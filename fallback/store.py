"""The file layer: a ``MemoryBackend`` over a folder of JSON episodes and Markdown views.

The files are the truth (FORMAT.md); each process keeps a catalog of them with a search index,
built at open, updated by its own writes and by a watcher for everyone else's. Writers take one
cross-process lock, so a write, the views it touches and a view's reconciliation never interleave.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock

from backends.errors import (
    BackendUnavailable,
    DualmemError,
    InvalidEpisode,
    StoreCorrupt,
    WriteFailed,
)
from backends.model import (
    DEFAULT_MAX_BODY_BYTES,
    EPISODE_ID,
    GROUP_ID,
    Episode,
    Hit,
    Receipt,
    ensure_body_fits,
)
from backends.protocol import Tombstone
from fallback import codec, disk, views
from fallback.catalog import Catalog, Signature, signature
from fallback.layout import VIEW_FILES, Layout, file_name, is_episode_name
from fallback.tombstones import TombstoneFolder
from fallback.watch import Watcher

_ViewRead = tuple[str | None, Signature | None]  # a view's text and signature; None when missing

LOCK_TIMEOUT = 20.0
# Writes hold the lock for about a millisecond; the default 50 ms poll would idle most waits.
LOCK_POLL = 0.001


class FileBackend:
    layer = "file"

    def __init__(self, root: Path, max_body_bytes: int) -> None:
        """Use ``await FileBackend.open(...)``, which also loads the folder and starts watching."""
        self._layout = Layout(root.absolute())
        self._max_body_bytes = max_body_bytes
        self._catalog = Catalog()
        self._lock = FileLock(self._layout.lock, timeout=LOCK_TIMEOUT, poll_interval=LOCK_POLL)
        self._watcher: Watcher | None = None
        self._tombstones = TombstoneFolder(self._layout.root)
        self._listeners: list[Callable[[], None]] = []
        self._closed = False

    @classmethod
    async def open(
        cls, root: str | os.PathLike[str], *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    ) -> FileBackend:
        """Open (creating when needed) the file layer in folder ``root``. Unreadable files do not
        stop it: they are listed in ``problems`` and left as they are."""
        backend = cls(Path(root), max_body_bytes)
        backend._start()
        return backend

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (from the watcher's thread) each time a change on disk, by this
        process or another, has been taken into this layer: what it reads is current then."""
        self._listeners.append(listener)

    def location(self, episode: Episode) -> str:
        """The file of ``episode`` (``backends.protocol.Locates``)."""
        return str(self._layout.episode_path(episode.group_id, episode.id))

    @property
    def problems(self) -> list[tuple[Path, str]]:
        """Files that could not be read or used, with the reason, for ``status`` to show."""
        return self._catalog.problems()

    async def upsert(self, episode: Episode) -> Receipt:
        return (await self.upsert_many([episode]))[0]

    async def upsert_many(self, episodes: Sequence[Episode]) -> list[Receipt]:
        """``upsert`` of each episode in order, the last of one id winning, under one hold of the
        lock: each view the batch touches is rendered once and each folder synced once. Every
        episode is checked before anything is written."""
        self._check_open()
        checked = [_validated(episode, self._max_body_bytes) for episode in episodes]
        stored = {episode.id: episode for episode in checked}
        self._store(list(stored.values()))
        places = {e.id: str(self._layout.episode_path(e.group_id, e.id)) for e in stored.values()}
        return [Receipt(id=e.id, layer=self.layer, location=places[e.id]) for e in checked]

    async def get(self, episode_id: str) -> Episode | None:
        self._check_open()
        return self._catalog.get(episode_id)

    async def delete(self, episode_id: str) -> bool:
        self._check_open()
        if not EPISODE_ID.fullmatch(episode_id):
            return False  # no such id can be stored, so it is missing
        return self._remove(episode_id)

    async def search(
        self,
        query: str,
        *,
        group_ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 10,
    ) -> list[Hit]:
        self._check_open()
        found = self._catalog.search(query, _as_set(group_ids), _as_set(kinds), limit)
        return [Hit(episode=episode, score=score, layer=self.layer) for episode, score in found]

    async def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        self._check_open()
        for episode in self._catalog.select(_as_set(group_ids), _as_set(kinds)):
            yield episode

    async def count(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> int:
        self._check_open()
        return len(self._catalog.select(_as_set(group_ids), _as_set(kinds)))

    # Tombstones (backends.protocol.Tombstones): deletes kept for the migrator to replay

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

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._watcher is not None:
            await asyncio.to_thread(self._watcher.stop)

    # Opening and watching

    def _start(self) -> None:
        root = self._layout.root
        try:
            root.mkdir(parents=True, exist_ok=True)
            disk.make_folder(self._layout.episodes)
            disk.make_folder(self._layout.views)
        except (OSError, WriteFailed) as exc:
            raise BackendUnavailable(self.layer, "cannot use its folder", f"{root}: {exc}") from exc
        disk.remove_dead_writers_temps([*self._layout.group_folders(), self._tombstones.folder])
        # Watch first, then load: a change made while loading is seen by one or the other.
        self._watcher = Watcher(root, self._on_change)
        try:
            with self._catalog.locked():
                for group in self._layout.groups():
                    self._sync_group(group)
            for view in self._layout.view_paths():
                self._on_change(view, edited=True)
        except BaseException:
            self._watcher.stop()
            raise

    def _on_change(self, path: Path, edited: bool) -> None:
        """Bring the catalog up to date with ``path`` (any path below the root; called from the
        watcher's thread). Failures are reported as problems: a watcher must not die."""
        try:
            if self._layout.episode_group(path) is not None:
                with self._catalog.locked():
                    self._load(path)
            elif (view := self._layout.view_of(path)) is not None:
                # Only a finished edit: a view read half-written would look like a person
                # deleting bullets, and every view dualmem writes is reconciled already.
                if edited:
                    self._reconcile(*view)
            elif path.parent == self._layout.episodes and GROUP_ID.fullmatch(path.name):
                with self._catalog.locked():
                    self._sync_group(path.name)
        except (DualmemError, OSError) as exc:
            self._catalog.report(path, str(exc))
        for listener in self._listeners:
            listener()

    def _sync_group(self, group: str, kinds: Collection[str] | None = None) -> None:
        """Make the catalog hold exactly the episode files of ``group`` on disk: new files are
        read, vanished ones dropped, and known ones re-read if changed (only those of ``kinds``,
        when given: a view's refresh need not stat the whole group)."""
        folder = self._layout.group_folder(group)
        on_disk: set[str] = set()
        if folder.is_dir():
            with os.scandir(folder) as entries:
                on_disk = {e.name for e in entries if is_episode_name(e.name)}
        known = self._catalog.names_in(folder)
        for name in known - on_disk:
            self._catalog.drop(folder / name)
        recheck = known & on_disk
        if kinds is not None:
            shown = self._catalog.select({group}, kinds)
            recheck &= {file_name(episode.id) for episode in shown}
        for name in sorted((on_disk - known) | recheck):
            self._load(folder / name)

    def _load(self, path: Path) -> None:
        """Read the episode file at ``path`` into the catalog, unless it is unchanged."""
        try:
            if (stored := self._catalog.at(path)) and stored.signature == signature(path.stat()):
                return
            with path.open("rb") as file:
                sig = signature(os.fstat(file.fileno()))
                data = file.read()
        except FileNotFoundError:
            self._catalog.drop(path)
            return
        except OSError as exc:
            self._catalog.report(path, f"cannot be read: {exc.strerror or exc}")
            return
        try:
            episode = codec.decode(data)
        except codec.UnreadableEpisode as exc:
            self._catalog.report(path, str(exc))
            return
        if (path.parent.name, path.name) != (episode.group_id, file_name(episode.id)):
            expected = self._layout.episode_path(episode.group_id, episode.id)
            self._catalog.report(path, f"holds episode {episode.id}, which belongs at {expected}")
            return
        self._catalog.put(episode, path, sig)

    # Writing, under the cross-process lock

    @contextmanager
    def _writing(self) -> Iterator[None]:
        with disk.held(self._lock), self._catalog.locked():
            yield

    def _store(self, batch: list[Episode]) -> None:
        with self._writing():
            groups = self._layout.groups()  # cannot change while we hold the lock
            copies = {episode.id: self._copies(episode.id, groups) for episode in batch}
            self._refresh_views({e.id: (copies[e.id], e) for e in batch})
            folders: set[Path] = set()
            for episode in batch:
                path = self._write_episode(episode, sync_folder=False)
                folders.add(path.parent)
                for old in copies[episode.id]:
                    if old != path:  # the episode moved to another group
                        disk.remove(old)
                        self._catalog.drop(old)
            for folder in sorted(folders):
                disk.sync_folder(folder)

    def _remove(self, episode_id: str) -> bool:
        with self._writing():
            copies = self._copies(episode_id, self._layout.groups())
            if not copies:
                return False
            self._refresh_views({episode_id: (copies, None)})
            for path in copies:
                disk.remove(path)
                self._catalog.drop(path)
            self._tombstones.bury([episode_id])
            return True

    def _copies(self, episode_id: str, groups: list[str]) -> list[Path]:
        """The readable files of this id in each of ``groups``, read into the catalog."""
        name = file_name(episode_id)
        found = []
        for group in groups:
            path = self._layout.episodes / group / name
            self._load(path)
            if self._catalog.at(path) is not None:
                found.append(path)
        return found

    def _refresh_views(self, changes: dict[str, tuple[list[Path], Episode | None]]) -> None:
        """Render every view that shows a changed episode before or after the change (id ->
        its stored copies, its new version or None when deleted). Views go first, so a crash
        leaves at worst a bullet that the next reconciliation settles."""
        touched = [
            stored.episode
            for paths, _ in changes.values()
            for path in paths
            if (stored := self._catalog.at(path))
        ]
        touched += [new for _, new in changes.values() if new is not None]
        affected = sorted({(e.group_id, e.kind) for e in touched if e.kind in VIEW_FILES})
        for group in sorted({group for group, _ in affected}):
            self._sync_group(group, kinds=VIEW_FILES)
        for group, kind in affected:
            arriving = [
                new for _, new in changes.values()
                if new is not None and (new.group_id, new.kind) == (group, kind)
            ]
            leaving = set(changes) - {new.id for new in arriving}
            shown = [e for e in self._catalog.select({group}, {kind}) if e.id not in changes]
            self._write_view(group, kind, [*shown, *arriving], drop=leaving)

    def _reconcile(self, group: str, kind: str) -> None:
        """Take in what a person changed in a view: a new hand bullet becomes an episode, a removed
        one takes its episode with it; then render the view again if it is not current."""
        path = self._layout.view_path(group, kind)
        with self._writing():
            seen = self._read_view(path)
            text = seen[0]
            if text is None:
                return
            self._sync_group(group, kinds={kind})
            bullets = views.hand_ids(views.parse(text), group, kind)
            rejected = []
            for episode_id, bullet in bullets.items():
                if self._catalog.get(episode_id) is None:
                    try:
                        episode = views.hand_episode(group, kind, bullet)
                        ensure_body_fits(episode, self._max_body_bytes)
                    except InvalidEpisode as exc:
                        rejected.append(f"bullet {bullet[:40]!r} is not a memory: {exc}")
                        continue
                    self._write_episode(episode)
            for episode in self._catalog.select({group}, {kind}):
                if views.is_hand_shaped(episode) and episode.id not in bullets:
                    stored_path = self._layout.episode_path(group, episode.id)
                    disk.remove(stored_path)
                    self._catalog.drop(stored_path)
            self._write_view(group, kind, self._catalog.select({group}, {kind}), seen=seen)
            if rejected:
                self._catalog.report(path, "; ".join(rejected))
            else:
                self._catalog.drop(path)

    def _write_episode(self, episode: Episode, *, sync_folder: bool = True) -> Path:
        path = self._layout.episode_path(episode.group_id, episode.id)
        status = disk.write_atomic(path, codec.encode(episode), sync_folder=sync_folder)
        self._catalog.put(episode, path, signature(status))
        return path

    def _write_view(
        self,
        group: str,
        kind: str,
        episodes: list[Episode],
        drop: set[str] | None = None,
        seen: _ViewRead | None = None,
    ) -> None:
        """Render the view; ``seen`` is the view as the caller read it, when it did."""
        path = self._layout.view_path(group, kind)
        try:
            existing, sig = seen or self._read_view(path)
            rendered = views.render(existing, group, kind, episodes, drop or set())
            if rendered != existing:
                # A person may be saving it right now, without our lock: then let theirs stand
                # (their close brings us back here).
                unchanged = (existing, sig)
                disk.write_atomic(
                    path, rendered.encode(), abandon_if=lambda: self._read_view(path) != unchanged
                )
        except StoreCorrupt as exc:
            self._catalog.report(path, exc.detail)  # a person's file we cannot read: leave it be

    def _read_view(self, path: Path) -> _ViewRead:
        try:
            with path.open("rb") as file:
                sig = signature(os.fstat(file.fileno()))
                data = file.read()
        except FileNotFoundError:
            return None, None
        try:
            return data.decode(), sig
        except UnicodeDecodeError:
            raise StoreCorrupt(path, "not UTF-8 text; left as it is") from None

    def _check_open(self) -> None:
        if self._closed:
            raise BackendUnavailable(self.layer, "closed")


def _validated(episode: Episode, max_body_bytes: int) -> Episode:
    """Check the episode again: one built with ``model_construct`` skipped the model's rules,
    and file paths are made from its fields."""
    checked = Episode.parse(**{name: getattr(episode, name, None) for name in Episode.model_fields})
    ensure_body_fits(checked, max_body_bytes)
    return checked


def _as_set(values: Sequence[str] | None) -> set[str] | None:
    return None if values is None else set(values)

