"""The context (``in_context.Context``) of the graph index's rows, built from the index's own
tables (each episode's group, kind, source and time, and its vector) on the first search by
meaning and again after a write: the index's connection counts every row it changes
(``total_changes``), and the index is the only writer. Building reads every stored vector once
(about 15 MB at 10,000 memories of 384 dimensions)."""

from __future__ import annotations

import sqlite3
from datetime import datetime

import orjson

from backends.graph.in_context import Context, Written
from backends.graph.vectors import VectorFile

_WRITTEN = ("SELECT vrow, grp, kind, json_extract(CAST(doc AS TEXT), '$.source',"
            " '$.created_at'), key FROM gx_episodes")
"""each episode's source and time in one parse of its document"""


class ContextRows:
    def __init__(self) -> None:
        self._built: Context | None = None
        self._when: tuple[int, int] | None = None
        """the connection's change count and the rows when ``_built`` was built"""

    def of(self, db: sqlite3.Connection, vectors: VectorFile, rows: int) -> Context:
        """The context of the first ``rows`` rows of ``vectors``, as the index holds them."""
        when = (db.total_changes, rows)
        if self._built is None or self._when != when:
            listed = db.execute(_WRITTEN).fetchall()
            self._built = Context.build(
                [row for row, *_ in listed],
                [Written(grp, kind, source or "", datetime.fromisoformat(at), key)
                 for _, grp, kind, said, key in listed
                 for source, at in [orjson.loads(said)]],
                vectors.matrix(rows))
            self._when = when
        return self._built
