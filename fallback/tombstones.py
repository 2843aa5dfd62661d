"""Deletes remembered for the graph (``backends.protocol.Tombstones``).

    <root>/tombstones/<file name of id>.json   {"id": ..., "deleted_at": ...}

A delete made while another process held the graph must reach the graph later; the migrator
replays these and then forgets them. One small file per id: writes are atomic and need no
lock, and a second delete of the same id replaces its tombstone.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from datetime import datetime
from pathlib import Path

import orjson

from backends.model import EPISODE_ID, now, utc
from backends.protocol import Tombstone
from backends.safe_files import MiB, read_regular
from fallback import disk
from fallback.layout import file_name, is_episode_file

FOLDER = "tombstones"
LIMIT = MiB
"""the most of one tombstone that is read"""


class TombstoneFolder:
    def __init__(self, root: Path) -> None:
        self.folder = root / FOLDER

    def bury(self, episode_ids: Collection[str], when: datetime | None = None) -> None:
        stamp = (when or now()).isoformat()
        for episode_id in episode_ids:
            if not EPISODE_ID.fullmatch(episode_id):
                continue  # no layer can hold it: there is nothing to delete anywhere
            document = {"id": episode_id, "deleted_at": stamp}
            disk.write_atomic(self.folder / file_name(episode_id), orjson.dumps(document))

    def read(self) -> list[Tombstone]:
        """Every tombstone on disk; an unreadable one is skipped (it can only hide a delete
        that the graph's own copy then keeps, never lose a memory)."""
        if not self.folder.is_dir():
            return []
        found = []
        with os.scandir(self.folder) as entries:
            paths = [Path(e.path) for e in entries if is_episode_file(Path(e.path))]
        for path in sorted(paths):
            try:
                # Never through a link (FileRefused is a ValueError: skipped too).
                document = orjson.loads(read_regular(path, limit=LIMIT, follow=False))
                found.append(
                    Tombstone(document["id"], utc(datetime.fromisoformat(document["deleted_at"])))
                )
            except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                continue
        return found

    def forget(self, episode_ids: Collection[str]) -> None:
        for episode_id in episode_ids:
            disk.remove(self.folder / file_name(episode_id))
