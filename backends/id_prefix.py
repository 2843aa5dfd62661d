"""Ids by prefix from a layer's SQLite index, as git names commits by a prefix of theirs: a range
of the id's own index (the table's primary key), each layer's index the same way.

The groups asked for are checked here, not in the query: given ``group IN (...)``, SQLite walks
the group's whole index (every memory of the group) rather than the id's range.
The caller owns the connection, as with ``backends.threads``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection


def ids_starting(db: sqlite3.Connection, table: str, key: str, group: str, prefix: str,
                 groups: Collection[str] | None) -> list[str]:
    """The ``key`` column's values in ``table`` (whose ``group`` is one of ``groups``; None:
    any) that start with ``prefix``, sorted."""
    if not prefix.isascii():  # ids are ASCII: every character of theirs sorts before DEL
        return []
    found = db.execute(f"SELECT {key}, {group} FROM {table} WHERE {key} >= ? AND {key} < ?"
                       f" ORDER BY {key}", (prefix, prefix + "\x7f"))
    return [row[0] for row in found if groups is None or row[1] in groups]
