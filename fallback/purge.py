"""Forgetting memories for good: their text out of every file the file layer wrote (the episode
file, the views, the earlier versions, the tombstone's kept copy, the held list, the kept facts
and enrichments, the index), where a delete keeps it for ``restore``. The tombstone itself
stays, id and time only, so that a graph still hears of the delete."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path

import orjson

from backends.safe_files import read_regular
from fallback import disk
from fallback.parts import Parts
from fallback.versions import FOLDER, Versions
from fallback.writer import EpisodeWriter

_LOG_LIMIT = 1 << 34
"""the most of a kept log that is read (they are not bounded otherwise)"""


class Purger:
    def __init__(self, parts: Parts, writer: EpisodeWriter) -> None:
        self._layout, self._index, self._guard, self._held, self._tombstones = parts
        self._writer = writer
        self._versions = Versions(self._layout.root / FOLDER)

    def purge(self, episode_ids: Collection[str]) -> list[str]:
        """Remove every trace of the text of these memories; returns those found anywhere
        (stored, or kept by a tombstone, a held list or earlier versions)."""
        kept = {episode.id: episode for _, episode in self._tombstones.forgotten()}
        found, texts = [], set()
        for episode_id in episode_ids:
            versions = [version.episode for version in self._versions.of(episode_id)]
            episode = self._index.get(episode_id) or kept.get(episode_id)
            every = [*versions, *([] if episode is None else [episode])]
            if not every:
                continue
            found.append(episode_id)
            texts |= {text for e in every for text in (e.body, e.name) if text.strip()}
            self._writer.remove(episode_id)
            with self._guard.writing():
                self._tombstones.remove([episode_id])  # its copy of the text, then
                self._tombstones.bury([episode_id])  # the delete alone, for the graph
                for group, kind in self._held.every():
                    self._held.release(group, kind, [episode_id])
                self._versions.remove([episode_id])
        if found:
            with self._guard.writing():
                for log in (self._layout.history, self._layout.enriched):
                    _scrub(log, [*found, *texts])
            self._index.compact()
        return found


def _scrub(path: Path, needles: Iterable[str]) -> None:
    """Rewrite the log ``path`` (JSON lines) without the lines that name any of ``needles``."""
    try:
        data = read_regular(path, limit=_LOG_LIMIT, follow=False)
    except FileNotFoundError:
        return
    marks = [orjson.dumps(needle)[1:-1] for needle in needles]  # as JSON writes them
    lines = data.splitlines(keepends=True)
    kept = [line for line in lines if not any(mark in line for mark in marks)]
    if len(kept) != len(lines):
        disk.write_atomic(path, b"".join(kept))
