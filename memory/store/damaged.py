"""Damaged copies of the graph, set aside when it could not be opened (``salvage.move_aside``:
``<home>/graph.damaged-<time>/``) or was rewritten from its rows (``salvage.replace``:
``<graph folder>/memory.kuzu.damaged-<time>/``): kept a while for whoever wants to look into
them, then removed. The ``keep-damaged`` setting says for how long: a count (``3``, the newest
three) or an age (``30d``); ``status`` lists those kept."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory.store.settings import KEEP_DAMAGED, SettingsError, read_settings

_NAME = re.compile(r".+\.damaged-(?P<stamp>\d{8}T\d{12})")
DEFAULT = "3"
"""the newest three are kept unless the home says otherwise"""


@dataclass(frozen=True)
class Retention:
    count: int | None = None
    age: timedelta | None = None
    """at most one of them: the other is None"""

    @classmethod
    def of(cls, home: Path) -> Retention:
        """The home's ``keep-damaged`` setting: ``N`` (keep the newest N) or ``Nd`` (keep those
        set aside in the last N days)."""
        text = read_settings(home).get("keep_damaged", DEFAULT)
        found = KEEP_DAMAGED().fullmatch(text)
        if found is None:
            raise SettingsError(f"keep-damaged: {text!r} is neither a count (3) nor an age (30d)")
        number = int(found[1])
        return cls(age=timedelta(days=number)) if found[2] else cls(count=number)

    def keeps(self, at: int, since: datetime, now: datetime) -> bool:
        """Whether the copy ``at`` places from the newest, set aside ``since``, is kept."""
        if self.count is not None:
            return at < self.count
        return self.age is None or now - since <= self.age


@dataclass(frozen=True)
class DamagedCopy:
    path: Path
    since: datetime
    size: int
    """bytes"""


def find(home: Path) -> list[DamagedCopy]:
    """The damaged copies in ``home`` and its graph folders, newest first."""
    found = []
    for path in [*home.glob("*.damaged-*"), *home.glob("*/*.damaged-*")]:
        named = _NAME.fullmatch(path.name)
        if named is None or path.is_symlink():
            continue
        since = datetime.strptime(named["stamp"], "%Y%m%dT%H%M%S%f").replace(tzinfo=UTC)
        found.append(DamagedCopy(path, since, _size(path)))
    return sorted(found, key=lambda copy: copy.since, reverse=True)


def prune(home: Path, retention: Retention, now: datetime | None = None) -> list[Path]:
    """Remove the damaged copies ``retention`` does not keep; returns them."""
    now = now or datetime.now(UTC)
    gone = [copy.path for at, copy in enumerate(find(home))
            if not retention.keeps(at, copy.since, now)]
    for path in gone:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    return gone


def _size(path: Path) -> int:
    if not path.is_dir():
        return path.stat().st_size
    return sum(os.path.getsize(os.path.join(folder, name))
               for folder, _, names in os.walk(path) for name in names)
