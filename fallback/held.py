"""Hand bullets held back from forgetting: memories whose bullets a mass change took out of
their view (a view emptied of them, reverted, checked out at an older version), kept until a
person says what they meant.

    <root>/held/<group_id>/<kind>.json    {"<id>": "<held since>", ...}

A held memory stays stored and searchable, and is not shown in its view again, so the view
stays as the person (or git) left it: ``git stash pop`` applies, and a bullet that comes back
into the view is no longer held. ``dualmem delete ID`` forgets one (its tombstone keeps the
text); ``dualmem restore ID`` shows it in its view again. Written under the file layer's lock.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from pathlib import Path

from backends import json_read
from backends.model import GROUP_ID, check_group_id, now, utc
from fallback import disk

FOLDER = "held"


class HeldFolder:
    def __init__(self, root: Path) -> None:
        self.folder = root / FOLDER

    def ids(self, group_id: str, kind: str) -> dict[str, datetime]:
        """The held ids of the view of ``kind`` in ``group_id``, with since when."""
        try:
            document = json_read.loads(self._path(group_id, kind).read_bytes())
        except (OSError, json_read.JSONDecodeError):
            return {}  # none (or a file a person broke: nothing is held then, nothing lost)
        if not isinstance(document, dict):
            return {}
        held = {}
        for episode_id, since in document.items():
            try:
                held[episode_id] = utc(datetime.fromisoformat(since))
            except (TypeError, ValueError):
                continue
        return held

    def every(self) -> dict[tuple[str, str], dict[str, datetime]]:
        """(group, kind) -> its held ids, for every view that holds any."""
        if not self.folder.is_dir():
            return {}
        found = {}
        for group in sorted(self.folder.iterdir()):
            if not GROUP_ID.fullmatch(group.name) or not group.is_dir():
                continue
            for path in sorted(group.glob("*.json")):
                if held := self.ids(group.name, path.stem):
                    found[group.name, path.stem] = held
        return found

    def hold(self, group_id: str, kind: str, episode_ids: Collection[str]) -> None:
        held = self.ids(group_id, kind)
        stamp = now()
        self._write(group_id, kind, held | {i: stamp for i in episode_ids if i not in held})

    def release(self, group_id: str, kind: str, episode_ids: Collection[str]) -> None:
        held = self.ids(group_id, kind)
        if held.keys() & set(episode_ids):
            self._write(group_id, kind, {i: t for i, t in held.items() if i not in episode_ids})

    def _write(self, group_id: str, kind: str, held: dict[str, datetime]) -> None:
        import orjson  # a write's: reads need not load it

        path = self._path(group_id, kind)
        if not held:
            disk.remove(path)
            return
        disk.write_atomic(path, orjson.dumps({i: t.isoformat() for i, t in held.items()},
                                             option=orjson.OPT_INDENT_2))

    def _path(self, group_id: str, kind: str) -> Path:
        return self.folder / check_group_id(group_id) / f"{kind}.json"
