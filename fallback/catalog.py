"""What one process knows of the files: every episode, where it lies, the search index, and the
files that could not be read. Shared by the caller's thread and the watcher's, behind one lock."""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from backends.model import Episode
from backends.ranking import LexicalIndex, search_text

# Changes when a file is replaced or rewritten; equal signatures let a refresh skip the read.
Signature = tuple[int, int, int]


def signature(stat: os.stat_result) -> Signature:
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


@dataclass(frozen=True, slots=True)
class Stored:
    episode: Episode
    path: Path
    signature: Signature


class Catalog:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._by_id: dict[str, Stored] = {}
        self._by_path: dict[Path, str] = {}
        self._by_group: dict[str, dict[str, Episode]] = {}  # so a group's select skips the rest
        self._index = LexicalIndex()
        self._problems: dict[Path, str] = {}
        # folder -> names of the files known there (episodes and problems): lets a folder be
        # compared with the disk without walking every path of every group.
        self._names: dict[Path, set[str]] = {}

    def _know(self, path: Path) -> None:
        self._names.setdefault(path.parent, set()).add(path.name)

    def _forget(self, path: Path) -> None:
        if path not in self._by_path and path not in self._problems:
            self._names.get(path.parent, set()).discard(path.name)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the catalog still across a disk change and its record here."""
        with self._lock:
            yield

    def put(self, episode: Episode, path: Path, sig: Signature) -> None:
        with self._lock:
            self._problems.pop(path, None)
            previous = self._by_id.get(episode.id)
            if previous is not None and previous.path != path:
                # Moved to another group: the old file's deletion must not drop the episode.
                self._by_path.pop(previous.path, None)
            if previous is not None:
                self._by_group[previous.episode.group_id].pop(episode.id, None)
            self._by_id[episode.id] = Stored(episode, path, sig)
            self._by_group.setdefault(episode.group_id, {})[episode.id] = episode
            self._by_path[path] = episode.id
            self._know(path)
            if previous is None or previous.episode != episode:
                self._index.add(
                    episode.id, search_text(episode), group=episode.group_id, kind=episode.kind
                )

    def drop(self, path: Path) -> None:
        """Forget the episode at ``path`` and any problem reported for it."""
        with self._lock:
            self._problems.pop(path, None)
            episode_id = self._by_path.pop(path, None)
            if episode_id is not None:
                stored = self._by_id.pop(episode_id)
                self._by_group[stored.episode.group_id].pop(episode_id, None)
                self._index.remove(episode_id)
            self._forget(path)

    def report(self, path: Path, reason: str) -> None:
        with self._lock:
            self.drop(path)
            self._problems[path] = reason
            self._know(path)

    def at(self, path: Path) -> Stored | None:
        with self._lock:
            episode_id = self._by_path.get(path)
            return None if episode_id is None else self._by_id[episode_id]

    def names_in(self, folder: Path) -> set[str]:
        """Names of the known files in ``folder``: episodes and reported problems."""
        with self._lock:
            return set(self._names.get(folder, ()))

    def get(self, episode_id: str) -> Episode | None:
        with self._lock:
            stored = self._by_id.get(episode_id)
            return None if stored is None else stored.episode

    def select(
        self, group_ids: Collection[str] | None = None, kinds: Collection[str] | None = None
    ) -> list[Episode]:
        """The matching episodes ordered by (created_at, id)."""
        with self._lock:
            if group_ids is None:
                candidates = [stored.episode for stored in self._by_id.values()]
            else:
                candidates = [e for g in group_ids for e in self._by_group.get(g, {}).values()]
        chosen = [e for e in candidates if kinds is None or e.kind in kinds]
        return sorted(chosen, key=lambda e: (e.created_at, e.id))

    def search(
        self,
        query: str,
        group_ids: Collection[str] | None,
        kinds: Collection[str] | None,
        limit: int,
    ) -> list[tuple[Episode, float]]:
        with self._lock:
            ranked = self._index.search(query, groups=group_ids, kinds=kinds, limit=limit)
            return [(self._by_id[str(key)].episode, score) for key, score in ranked]

    def problems(self) -> list[tuple[Path, str]]:
        with self._lock:
            return sorted(self._problems.items())
