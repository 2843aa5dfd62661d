"""The order of the views in the file layer's index (``fallback.index``): which episode shows
where, page by page, read from the episodes table."""

from __future__ import annotations

import sqlite3
import threading
from typing import NamedTuple


class ViewEntry(NamedTuple):
    """Where an episode shows in its view."""

    group_id: str
    kind: str
    created_at: str
    """``time_key`` of its creation: with the id, its place in the view's order"""
    bullet: str | None
    hand: bool
    starts: bool


class ViewOrder:
    """Queries of the views' order over the index's connection (shared, with its lock)."""

    def __init__(self, db: sqlite3.Connection, lock: threading.RLock) -> None:
        self._db = db
        self._lock = lock

    def bullets(self, group_id: str, kind: str) -> list[tuple[str, str, bool]]:
        """(id, view bullet, hand-shaped) of the group's episodes of ``kind``, oldest first."""
        with self._lock:
            return [(row[0], row[1], bool(row[2])) for row in self._db.execute(
                "SELECT id, bullet, hand FROM episodes WHERE group_id = ? AND kind = ?"
                " ORDER BY created_at, id", (group_id, kind))]

    def view_entry(self, episode_id: str) -> ViewEntry | None:
        """Where the stored episode shows in its view."""
        with self._lock:
            row = self._db.execute(
                "SELECT group_id, kind, created_at, bullet, hand, starts FROM episodes"
                " WHERE id = ?", (episode_id,)).fetchone()
        return None if row is None else ViewEntry(row[0], row[1], row[2], row[3], bool(row[4]),
                                                  bool(row[5]))

    def page_starts(self, group_id: str, kind: str) -> list[tuple[str, str]]:
        """(created_at key, id) of each bullet that starts a later page of the view, in order."""
        with self._lock:
            return [(row[0], row[1]) for row in self._db.execute(
                "SELECT created_at, id FROM episodes WHERE group_id = ? AND kind = ?"
                " AND starts = 1 ORDER BY created_at, id", (group_id, kind))]

    def page_bullets(self, group_id: str, kind: str, start: tuple[str, str] | None,
                     end: tuple[str, str] | None) -> list[tuple[str, str]]:
        """(id, view bullet) of the page from ``start`` (None: the first page, which shows
        every hand-shaped episode too) to ``end`` (None: the last), oldest first."""
        where = ["group_id = ?", "kind = ?", "bullet IS NOT NULL"]
        params: list[str] = [group_id, kind]
        if start is not None:
            where.append("hand = 0 AND (created_at, id) >= (?, ?)")
            params += start
        if end is not None:
            where.append("(hand = 1 OR (created_at, id) < (?, ?))")
            params += end
        with self._lock:
            return [(row[0], row[1]) for row in self._db.execute(
                f"SELECT id, bullet FROM episodes WHERE {' AND '.join(where)}"
                " ORDER BY created_at, id", params)]

    def has_hand(self, group_id: str, kind: str) -> bool:
        """Whether any episode of the group and kind shows as a hand bullet."""
        with self._lock:
            return self._db.execute(
                "SELECT 1 FROM episodes WHERE group_id = ? AND kind = ? AND hand = 1 LIMIT 1",
                (group_id, kind)).fetchone() is not None

    def neighbours(self, group_id: str, kind: str, created_at: str,
                   episode_id: str) -> tuple[str | None, str | None]:
        """The ids of the episodes of the group and kind just before and just after
        (``created_at``, ``episode_id``) in view order; None where there is none."""
        found: list[str | None] = []
        with self._lock:
            for sign, direction in (("<", "DESC"), (">", "")):
                row = self._db.execute(
                    "SELECT id FROM episodes WHERE group_id = ? AND kind = ?"
                    f" AND (created_at, id) {sign} (?, ?)"
                    f" ORDER BY created_at {direction}, id {direction} LIMIT 1",
                    (group_id, kind, created_at, episode_id)).fetchone()
                found.append(None if row is None else row[0])
        return found[0], found[1]

