"""The earlier versions of a memory, kept when it is rewritten in place (a person correcting its
bullet in a view), so that a correction loses nothing.

    <root>/versions/<file name of id>.jsonl
        {"replaced_at": ..., "episode": {...}}    one line per earlier version, oldest first

Written under the file layer's lock; a damaged line costs only itself.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from pathlib import Path

import orjson

from backends.errors import InvalidEpisode
from backends.model import Episode, now, utc
from backends.safe_files import read_regular
from fallback import disk
from fallback.layout import file_name

FOLDER = "versions"
LIMIT = 1 << 30
"""the most of one memory's versions that is read"""


class VersionFolder:
    def __init__(self, root: Path) -> None:
        self.folder = root / FOLDER

    def keep_earlier(self, earlier: Episode, when: datetime | None = None) -> None:
        """Keep ``earlier``, the version of a memory that a rewrite of the same id replaces."""
        path = self._path(earlier.id)
        line = orjson.dumps({"replaced_at": (when or now()).isoformat(),
                             "episode": earlier.to_json()})
        disk.write_atomic(path, self._read(path) + line + b"\n")

    def of(self, episode_id: str) -> list[tuple[datetime, Episode]]:
        """(replaced at, version) of each earlier version of ``episode_id``, oldest first."""
        found = []
        for line in self._read(self._path(episode_id)).splitlines():
            try:
                document = orjson.loads(line)
                found.append((utc(datetime.fromisoformat(document["replaced_at"])),
                              Episode.parse(**document["episode"])))
            except (ValueError, KeyError, TypeError, InvalidEpisode):
                continue
        return found

    def remove(self, episode_ids: Collection[str]) -> None:
        """Drop every earlier version of these memories."""
        for episode_id in episode_ids:
            disk.remove(self._path(episode_id))

    def _path(self, episode_id: str) -> Path:
        return self.folder / f"{file_name(episode_id).removesuffix('.json')}.jsonl"

    def _read(self, path: Path) -> bytes:
        try:
            return read_regular(path, limit=LIMIT, follow=False)  # never through a link
        except (OSError, ValueError):
            return b""
