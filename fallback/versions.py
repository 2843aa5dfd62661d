"""Each memory's earlier versions, kept beside the journal: the journal holds a memory's latest
version only, and the graph is rebuilt from the journal, so what a person or an agent changed
or forgot is kept here, where a rebuild leaves it.

    <home>/files/versions/<file name of id>.jsonl   one line per change, oldest first:
        {"at": ..., "change": "updated" | "forgotten" | "restored" | "merged", "reason": ...,
         "episode": {the memory as it was before the change}, "into": id (merged only)}

One file per memory: a memory's history is read without reading anyone else's, and removing
every trace of one memory (``forget --purge``) removes one file. Lines are appended and made
durable before the change they record (``fallback.kept_log``): a crash in between leaves a
version equal to the memory as it stands, never a change without its history.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from backends.errors import InvalidEpisode, MigrationError
from backends.model import Episode, now
from fallback import kept_log
from fallback.layout import EPISODE_SUFFIX, file_name

Change = Literal["updated", "forgotten", "restored", "merged"]
FOLDER = "versions"
_SUFFIX = ".jsonl"


@dataclass(frozen=True, slots=True)
class Version:
    """One change of a memory: what it was before (``episode``), when, and why."""

    change: Change
    episode: Episode
    at: datetime
    reason: str = ""
    into: str = ""
    """merged: the memory it was merged into"""

    def to_json(self) -> dict[str, Any]:
        found = {"at": self.at.isoformat(), "change": self.change, "reason": self.reason,
                 "episode": self.episode.to_json()}
        return found | {"into": self.into} if self.into else found

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Version:
        """``MigrationError`` for a line ``to_json`` did not write (``kept_log`` skips it)."""
        try:
            return cls(change=data["change"], episode=Episode.parse(**data["episode"]),
                       at=datetime.fromisoformat(data["at"]), reason=str(data.get("reason", "")),
                       into=str(data.get("into", "")))
        except (KeyError, TypeError, ValueError, InvalidEpisode) as exc:
            raise MigrationError(f"not a version: {exc!r}") from exc


class Versions:
    """The versions folder of one home."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, episode_id: str) -> Path:
        return self.folder / (file_name(episode_id).removesuffix(EPISODE_SUFFIX) + _SUFFIX)

    def of(self, episode_id: str) -> list[Version]:
        """Every recorded change of ``episode_id``, oldest first."""
        return kept_log.read(self.path(episode_id), Version.from_json)

    def keep(self, change: Change, episode: Episode, *, reason: str = "",
             into: str = "") -> Version:
        """Record durably that ``episode`` (as it is now) is about to change; ``WriteFailed``
        when the disk refuses, before anything changed."""
        version = Version(change, episode, now(), reason, into)
        self.folder.mkdir(parents=True, exist_ok=True)
        kept_log.append(self.path(episode.id), [version])
        return version

    def forgotten(self, episode_id: str) -> Episode | None:
        """The memory as it was when last forgotten (or merged into another), unless it was
        restored since."""
        found = self.of(episode_id)
        return found[-1].episode if found and found[-1].change in ("forgotten", "merged") \
            else None

    def remove(self, episode_ids: Collection[str]) -> None:
        """Drop every version of these memories (``forget --purge``)."""
        for episode_id in episode_ids:
            self.path(episode_id).unlink(missing_ok=True)

    def ids(self) -> list[str]:
        """Every id with a recorded change (for finding a forgotten memory by a prefix)."""
        try:
            with os.scandir(self.folder) as entries:
                names = [entry.name for entry in entries if entry.name.endswith(_SUFFIX)]
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            stem = name.removesuffix(_SUFFIX)
            if "~" not in stem:  # a plain id is its own file name (fallback.layout)
                found.append(stem)
            elif versions := kept_log.read(self.folder / name, Version.from_json):
                found.append(versions[0].episode.id)
        return found
