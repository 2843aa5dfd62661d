"""The vector half of the graph's search index (``index.py``): each indexed episode's vector is
a row of the vector file (``vectors.py``), pointed at by the ``vrow`` of its ``gx_episodes``
row; rows no key points at any more are listed in ``gx_free`` and reused first. A query's
nearest rows come from one product over the whole file; only their candidates are looked up."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from backends.graph.context_rows import ContextRows
from backends.graph.embedder import Vectors
from backends.graph.vectors import VectorFile

# Hashed words collide (1 in 128 dimensions), so a random string reaches cosine 0.5 with some
# short document in 1-2% of queries on LoCoMo; at 0.6 "no match" stays an empty answer.
VECTOR_ONLY_MIN = 0.6
LOOKUP = 256  # vector candidates looked up at once (their keys, groups and kinds)


class VectorRows:
    """The vector file of one index and which of its rows are in use."""

    def __init__(self, db: sqlite3.Connection, vectors: VectorFile, dimension: int) -> None:
        self._db = db
        self._vectors = vectors
        self._dimension = dimension
        self._context = ContextRows()

    def current(self, token: str) -> bool:
        """The file is stamped ``token`` and holds every row a key points at."""
        return self._vectors.stamp() == token and self._vectors.rows() >= self.high()

    def replace(self, token: str, vectors: Sequence[Vectors]) -> None:
        """A new file stamped ``token`` holding ``vectors`` in rows 0..n-1 (its ``gx_free``
        emptied by the caller's rebuild)."""
        matrix = (np.stack(list(vectors)) if vectors
                  else np.zeros((0, self._dimension), dtype=np.float32))
        self._vectors.close()
        try:
            self._vectors = VectorFile.create(self._vectors.path, self._dimension, token, matrix)
        except OSError:  # no room for the file: this process searches a copy in memory, and
            # the next open, finding no file of this token, builds again
            self._vectors = VectorFile.create(None, self._dimension, token, matrix)

    def write(self, vectors: Sequence[Vectors]) -> list[int]:
        """Write ``vectors`` into rows no key points at; returns the rows. Before the commit
        that points keys at them: a reader never meets these rows half written under a key."""
        rows = self._allocate(len(vectors))
        if vectors:
            self._vectors.write(rows, np.stack(list(vectors)))
        return rows

    def free(self, rows: Sequence[int]) -> None:
        """``rows`` are no longer pointed at (in the caller's transaction)."""
        self._db.executemany("INSERT INTO gx_free VALUES (?)", ((row,) for row in rows))

    def clear(self, rows: Sequence[int]) -> None:
        """Zero rows no key points at any more, so that they stop costing lookups; after the
        commit (a rollback leaves them pointed at). Failing leaves them to be skipped."""
        with contextlib.suppress(OSError):
            self._vectors.clear(rows)

    def nearest(
        self, query_vector: Vectors, groups: Collection[str] | None,
        kinds: Collection[str] | None, wanted: int, found: Collection[str], floor: float,
        *, in_context: bool = False,
    ) -> list[tuple[str, float]]:
        """The ``wanted`` nearest keys not in ``found``, of ``groups`` and ``kinds``, with
        cosine >= ``floor``, nearest first (ties by key: any row order answers
        alike); ``in_context``: by the cosine with each memory's context vector
        (``in_context``). One product over the stored matrix; only its candidates are looked
        up."""
        similarity = self._vectors.similarities(query_vector, self.high())
        if in_context:
            similarity = self._context.of(self._db, self._vectors, len(similarity)).cosines(
                similarity)
        # Rounded: the same vector gives the same similarity in any row.
        similarity = np.round(similarity, 6)
        rows = np.flatnonzero(similarity >= floor)
        rows = rows[np.argsort(-similarity[rows], kind="stable")]
        near: list[tuple[float, str]] = []
        for start in range(0, len(rows), LOOKUP):
            part = [int(row) for row in rows[start : start + LOOKUP]]
            if len(near) >= wanted and similarity[part[0]] < near[wanted - 1][0]:
                break
            for row, key, grp, kind in self._keys_of(part):
                if key not in found and (groups is None or grp in groups) and (
                        kinds is None or kind in kinds):
                    near.append((float(similarity[row]), key))
            near.sort(key=lambda pair: (-pair[0], pair[1]))
        return [(key, min(1.0, score)) for score, key in near[:wanted]]

    def high(self) -> int:
        """One past the highest row in use or free: the rows a search reads."""
        (high,) = self._db.execute(
            "SELECT max(coalesce((SELECT max(vrow) FROM gx_episodes), -1),"
            " coalesce((SELECT max(vrow) FROM gx_free), -1))").fetchone()
        return int(high) + 1

    @property
    def path(self) -> Path | None:
        return self._vectors.path

    def close(self) -> None:
        self._vectors.close()

    def _keys_of(self, rows: list[int]) -> list[tuple[int, str, str, str]]:
        """(row, key, group, kind) of the episodes at ``rows`` (a row no key points at: none)."""
        return self._db.execute(
            "SELECT vrow, key, grp, kind FROM gx_episodes"
            f" WHERE vrow IN ({','.join('?' * len(rows))})", rows).fetchall()

    def _allocate(self, count: int) -> list[int]:
        """``count`` rows no key points at: free ones first, then past the highest."""
        high = self.high()
        free = [int(row) for (row,) in self._db.execute(
            "SELECT vrow FROM gx_free ORDER BY vrow LIMIT ?", (count,))]
        if free:
            self._db.execute("DELETE FROM gx_free WHERE vrow <= ?", (free[-1],))
        return free + list(range(high, high + count - len(free)))
