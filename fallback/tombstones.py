"""Deletes remembered for the graph (``backends.protocol.Tombstones``), and the text of what
people typed that was forgotten.

    <root>/tombstones/<file name of id>.json
        {"id": ..., "deleted_at": ..., "episode": {...}, "replayed": false}

A delete made while another process held the graph must reach the graph later; the migrator
replays these and then forgets them. One small file per id: writes are atomic and need no
lock, and a second delete of the same id replaces its tombstone.

The tombstone of a hand bullet (text a person typed in a view) keeps the whole episode
(``episode``, as ``Episode.to_json`` writes it), so that status can show what was forgotten and
``restore`` can bring it back. Once replayed it is kept, marked ``replayed``, until restored.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from backends import json_read
from backends.errors import InvalidEpisode
from backends.model import EPISODE_ID, Episode, now, utc
from backends.protocol import Tombstone
from backends.safe_files import read_regular
from fallback import disk
from fallback.layout import file_name, is_episode_file

FOLDER = "tombstones"
LIMIT = 1 << 30
"""the most of one tombstone that is read (it keeps a whole episode: bounded as an episode
file is)"""


class TombstoneFolder:
    def __init__(self, root: Path) -> None:
        self.folder = root / FOLDER

    def bury(self, episode_ids: Collection[str], when: datetime | None = None, *,
             keep: Collection[Episode] = ()) -> None:
        """Record these deletes; the text of the episodes in ``keep`` is kept with them (and
        a tombstone's text already kept stays)."""
        import orjson  # a write's: reads need not load it

        stamp = (when or now()).isoformat()
        kept = {episode.id: episode.to_json() for episode in keep}
        for episode_id in episode_ids:
            if not EPISODE_ID.fullmatch(episode_id):
                continue  # no layer can hold it: there is nothing to delete anywhere
            path = self.folder / file_name(episode_id)
            document: dict[str, Any] = {"id": episode_id, "deleted_at": stamp}
            text = kept.get(episode_id) or (_load(path) or {}).get("episode")
            if text is not None:
                document |= {"episode": text, "replayed": False}
            disk.write_atomic(path, orjson.dumps(document))

    def read(self) -> list[Tombstone]:
        """Every tombstone not yet replayed; an unreadable one is skipped (it can only hide a
        delete that the graph's own copy then keeps, never lose a memory)."""
        found = []
        for _, document in self._documents():
            if document.get("replayed"):
                continue
            try:
                found.append(
                    Tombstone(document["id"], utc(datetime.fromisoformat(document["deleted_at"])))
                )
            except (KeyError, TypeError, ValueError):
                continue
        return found

    def forgotten(self) -> list[tuple[datetime, Episode]]:
        """(when, episode) of every tombstone that keeps its episode's text, newest first."""
        found = []
        for _, document in self._documents():
            try:
                found.append((utc(datetime.fromisoformat(document["deleted_at"])),
                              Episode.parse(**document["episode"])))
            except (KeyError, TypeError, ValueError, InvalidEpisode):
                continue
        return sorted(found, key=lambda pair: pair[0], reverse=True)

    def forget(self, episode_ids: Collection[str]) -> None:
        """These deletes have been replayed: drop their tombstones, but keep the text of those
        that keep one."""
        import orjson  # a write's: reads need not load it

        for episode_id in episode_ids:
            path = self.folder / file_name(episode_id)
            document = _load(path)
            if document is not None and "episode" in document:
                if not document.get("replayed"):
                    disk.write_atomic(path, orjson.dumps(document | {"replayed": True}))
                continue
            disk.remove(path)

    def remove(self, episode_ids: Collection[str]) -> None:
        """Drop these tombstones, text and all (the memory is stored again)."""
        for episode_id in episode_ids:
            disk.remove(self.folder / file_name(episode_id))

    def _documents(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        if not self.folder.is_dir():
            return
        with os.scandir(self.folder) as entries:
            paths = [Path(e.path) for e in entries if is_episode_file(Path(e.path))]
        for path in sorted(paths):
            document = _load(path)
            if document is not None:
                yield path, document


def _load(path: Path) -> dict[str, Any] | None:
    try:
        # Never through a link (FileRefused is a ValueError: skipped too).
        document = json_read.loads(read_regular(path, limit=LIMIT, follow=False))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None
