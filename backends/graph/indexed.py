"""The episodes the graph's search index holds (``gx_episodes``: key, group, kind, the episode
as JSON), read back so that a search answers without a database lookup per hit. Recently read
ones are kept decoded, and the places (group, kind) and group sizes entity links ask for at
every search are kept too: only the index writes these rows, and it tells ``changed``."""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

from backends import id_prefix
from backends.errors import StoreCorrupt
from backends.model import Episode

DECODED = 4096  # episodes kept decoded: a few contexts' worth, a few MB


class IndexedEpisodes:
    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db = db
        self._path = path
        """the index file (named in a ``StoreCorrupt``)"""
        self._decoded: OrderedDict[str, Episode] = OrderedDict()
        """episodes recently read, decoded"""
        self._places: dict[str, tuple[str, str]] = {}
        """(group, kind) of the episodes ``located`` so far"""
        self._sizes: dict[str, int] = {}

    def changed(self, keys: Iterable[str]) -> None:
        """``keys`` were written or dropped: what is kept of them goes, and every group size."""
        self._sizes.clear()
        for key in keys:
            self._decoded.pop(key, None)
            self._places.pop(key, None)

    def emptied(self) -> None:
        self._decoded.clear()
        self._places.clear()
        self._sizes.clear()

    def contains(self, key: str) -> bool:
        if not storable(key):
            return False
        return self._db.execute("SELECT 1 FROM gx_episodes WHERE key = ?",
                                (key,)).fetchone() is not None

    def episode(self, key: str) -> Episode | None:
        """The indexed episode ``key``. Recently read ones are kept decoded (a context's four
        to six searches find mostly the same few dozen, each a row read and checked)."""
        if (found := self._decoded.get(key)) is not None:
            self._decoded.move_to_end(key)
            return found
        if not storable(key):
            return None
        row = self._db.execute("SELECT doc FROM gx_episodes WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            found = Episode.model_validate_json(row[0])
        except ValueError as exc:
            raise StoreCorrupt(self._path, f"an indexed episode: {exc}") from exc
        self._decoded[key] = found
        if len(self._decoded) > DECODED:
            self._decoded.popitem(last=False)
        return found

    def places(self) -> Iterator[tuple[str, str, str]]:
        """(key, group, kind) of every indexed episode (read from ``gx_places`` alone, which
        holds the key too: the rows with their vectors and episodes stay unread)."""
        yield from self._db.execute("SELECT key, grp, kind FROM gx_episodes INDEXED BY gx_places")

    def located(self, keys: Collection[str]) -> dict[str, tuple[str, str]]:
        """key -> (group, kind) of those of ``keys`` indexed (``links.Places``)."""
        found = {key: place for key in keys if (place := self._places.get(key)) is not None}
        listed = [key for key in keys if key not in found and storable(key)]
        for start in range(0, len(listed), 500):
            part = listed[start : start + 500]
            for key, grp, kind in self._db.execute(
                    "SELECT key, grp, kind FROM gx_episodes"
                    f" WHERE key IN ({','.join('?' * len(part))})", part):
                found[key] = self._places[key] = (grp, kind)
        return found

    def group_size(self, group: str) -> int:
        """How many episodes of ``group`` are indexed (read from ``gx_places`` alone)."""
        if (size := self._sizes.get(group)) is None:
            size = self._sizes[group] = int(self._db.execute(
                "SELECT count(*) FROM gx_episodes WHERE grp = ?", (group,)).fetchone()[0])
        return size

    def ids_starting(self, prefix: str, groups: Collection[str] | None) -> list[str]:
        """The keys of ``groups`` (None: all) that start with ``prefix``, sorted: a range of
        the key's index (``backends.id_prefix``)."""
        return id_prefix.ids_starting(self._db, "gx_episodes", "key", "grp", prefix, groups)

    def rows_of(self, keys: Iterable[str]) -> dict[str, int]:
        """key -> its vector's row, of those of ``keys`` indexed."""
        found: dict[str, int] = {}
        listed = [key for key in keys if storable(key)]
        for start in range(0, len(listed), 500):
            part = listed[start : start + 500]
            found.update(self._db.execute(
                f"SELECT key, vrow FROM gx_episodes WHERE key IN ({','.join('?' * len(part))})",
                part).fetchall())
        return found


def storable(key: str) -> bool:
    """A key SQLite can take (no lone surrogate): no other can be indexed."""
    try:
        key.encode()
    except UnicodeEncodeError:
        return False
    return True
