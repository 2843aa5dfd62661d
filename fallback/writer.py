"""Storing, removing and restoring episodes: each one change of the files, the index and the
views, made under the layer's lock (``WriteGuard``) and undone should it fail."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from backends.model import Episode
from fallback import codec, disk
from fallback.file_record import signature
from fallback.index import Row, time_key
from fallback.keeper import ViewKeeper
from fallback.parts import Parts


class EpisodeWriter:
    def __init__(self, parts: Parts, keeper: ViewKeeper) -> None:
        self._layout, self._index, self._guard, self._held, self._tombstones = parts
        self._files, self._pages = self._index.files, self._index.pages
        self._keeper = keeper

    def store(self, batch: list[Episode]) -> None:
        # Written and synced before the lock (the slow part, and nobody else's business);
        # under it, only renames, one sync per folder and the index.
        self._guard.check_writable()
        staged: list[disk.Staged] = []
        undo: list[Callable[[], object]] = []
        leaving: list[Path] = []
        paths = [self._layout.episode_path(e.group_id, e.id) for e in batch]
        try:
            for e, path in zip(batch, paths, strict=True):
                staged.append(disk.stage(path, codec.encode(e)))
            with self._guard.writing(undo, after=leaving):
                self._keeper.take_in_edited_pages(self._places(batch))
                moved = [(e, where) for e in batch
                         if (where := self._index.located(e.id)) is not None]
                before = {e.id: self._pages.view_entry(e.id) for e, _ in moved}
                was_hand = any(entry is not None and entry.hand for entry in before.values())
                touched = {(e.group_id, e.kind) for e in batch}
                touched |= {(where[0], where[1]) for _, where in moved}
                rows: list[Row] = []
                for episode, new, path in zip(batch, staged, paths, strict=True):
                    undo.append(self._restorer(path, episode.id))
                    new.put()
                    rows.append(Row.of(episode, signature(new.status)))
                for episode, (old_group, _, _) in moved:
                    if old_group != episode.group_id:
                        leaving.append(self._layout.episode_path(old_group, episode.id))
                folders = {path.parent for path in paths}
                for folder in sorted(folders):
                    disk.sync_folder(folder)
                self._index.put(rows)
                self._guard.record_folders(folders | {self._layout.group_folder(where[0])
                                                for _, where in moved})
                self._keeper.render(touched, changed=None if was_hand else [e.id for e in batch],
                             before=before)
        finally:
            for new in staged:
                new.discard()

    def _places(self, batch: list[Episode]) -> dict[tuple[str, str], list[tuple[str, str]]]:
        """view -> (created_at key, id) of the bullets ``batch`` shows there, and of those it
        moves away from there."""
        places: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for e in batch:
            places.setdefault((e.group_id, e.kind), []).append((time_key(e.created_at), e.id))
            if (entry := self._pages.view_entry(e.id)) is not None:
                places.setdefault((entry.group_id, entry.kind), []).append(
                    (entry.created_at, e.id))
        return places

    def _restorer(self, path: Path, episode_id: str) -> Callable[[], object]:
        """What puts ``path`` back as the index has it now: its stored episode, or nothing."""
        before = self._index.get(episode_id)
        where = self._index.located(episode_id)
        if before is None or where is None or self._layout.episode_path(where[0],
                                                                          episode_id) != path:
            return lambda: disk.remove(path)
        return lambda: disk.write_atomic(path, codec.encode(before))

    def remove(self, episode_id: str) -> bool:
        undo: list[Callable[[], object]] = []
        with self._guard.writing(undo):
            where = self._index.located(episode_id)
            if where is None:
                return False
            entry = self._pages.view_entry(episode_id)
            self._keeper.take_in_edited_pages(
                {(where[0], where[1]): [] if entry is None else [(entry.created_at, episode_id)]})
            where = self._index.located(episode_id)
            if where is None:  # the person had removed its bullet: forgotten just now
                return True
            path = self._layout.episode_path(where[0], episode_id)
            entry = self._pages.view_entry(episode_id)
            # The tombstone first: it can fail (a full disk) while nothing is changed yet, and
            # one left by a delete that fails later names a live id, which is never replayed.
            # A hand bullet's keeps its text, which a person typed; so does a held bullet's,
            # forgotten as meant after a mass change took it out of its view.
            kept = self._index.get(episode_id) if entry is not None and (
                entry.hand or episode_id in self._held.ids(where[0], where[1])) else None
            self._tombstones.bury([episode_id], keep=[] if kept is None else [kept])
            self._held.release(where[0], where[1], [episode_id])
            # Old copies in other groups, left by a writer killed while moving this episode:
            # unindexed while this one stands, they would come back once it is gone.
            stale = [copy for group in self._layout.groups() if group != where[0]
                     if (copy := self._layout.episode_path(group, episode_id)).exists()]
            for copy in stale:
                disk.remove(copy)
                self._files.clear_problem(copy)
            undo.append(self._restorer(path, episode_id))
            disk.remove(path)
            self._index.drop([episode_id])
            self._guard.record_folders({path.parent, *(copy.parent for copy in stale)})
            self._keeper.render({(where[0], where[1])}, drop={episode_id},
                         changed=None if entry is None or entry.hand else [episode_id],
                         before={episode_id: entry})
            return True

    def restore(self, episode_id: str) -> Episode | None:
        with self._guard.writing():
            where = self._index.located(episode_id)
            if where is not None:
                group, kind = where[0], where[1]
                if episode_id not in self._held.ids(group, kind):
                    return None
                self._held.release(group, kind, [episode_id])
                entry = self._pages.view_entry(episode_id)
                if entry is None or entry.hand:
                    self._keeper.write_first_page(group, kind)
                else:  # a generated bullet: back on its page, wherever that is
                    self._keeper.render({(group, kind)}, changed=[episode_id],
                                        before={episode_id: entry})
                return self._index.get(episode_id)
        kept = next((e for _, e in self._tombstones.forgotten() if e.id == episode_id), None)
        if kept is None:
            return None
        self.store([kept])
        self._tombstones.remove([episode_id])
        return kept

