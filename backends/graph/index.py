"""The graph layer's search index: the shared ``TextIndex``, and below its matches the
nearest stored vectors (a hybrid that never reorders lexical matches; see ``VECTOR_WEIGHT``).

Built from the Episodic rows at open and kept current by our own writes (we are the only
read-write process), so it cannot lose a document the way Kùzu's full-text index does, and it
does not depend on the database's full-text extension (LadybugDB does not bundle it)."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from backends.graph.embedder import Vectors
from backends.textindex import Document, TextIndex

# Measured on LoCoMo dev (bench/graph_layer.py): these hashing vectors alone reach R@10 0.42
# against 0.64 lexical, and no weighted sum of the two (weights 0.001 to 0.5) beat lexical alone.
# So vectors never reorder lexical matches: they add near-duplicates below them that no query
# term reaches. A semantic embedder (see embedder.Embedder) would make this part earn more.
VECTOR_WEIGHT = 0.05  # a vector-only hit scores at most this share of the weakest lexical match
# Hashed words collide (1 in 128 dimensions), so a random string reaches cosine 0.5 with some
# short document in 1-2% of queries on LoCoMo; at 0.6 "no match" stays an empty answer.
VECTOR_ONLY_MIN = 0.6


@dataclass(frozen=True, slots=True)
class Entry:
    key: str
    text: str
    group: str
    kind: str
    vector: Vectors


class EpisodeIndex:
    def __init__(self, dimension: int) -> None:
        self._db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        TextIndex.create(self._db)
        self.lexical = TextIndex(self._db)
        self._rows: dict[str, int] = {}
        self._free: list[int] = []
        self._vectors: Vectors = np.zeros((0, dimension), dtype=np.float32)
        # Per row: group and kind codes, -1 for a free row.
        self._groups: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._kinds: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._codes: dict[str, int] = {}
        self._keys: list[str | None] = []

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, key: str) -> bool:
        return key in self._rows

    def put(self, entries: Sequence[Entry]) -> None:
        """Index (or re-index) each entry."""
        self._db.execute("BEGIN")
        self.lexical.add_many(Document(e.key, e.text, e.group, e.kind) for e in entries)
        self._db.execute("COMMIT")
        for entry in entries:
            row = self._rows.get(entry.key)
            if row is None:
                row = self._free.pop() if self._free else self._grow()
                self._rows[entry.key] = row
                self._keys[row] = entry.key
            self._vectors[row] = entry.vector
            self._groups[row] = self._code(entry.group)
            self._kinds[row] = self._code(entry.kind)

    def drop(self, key: str) -> None:
        row = self._rows.pop(key, None)
        if row is None:
            return
        self.lexical.remove(key)
        self._vectors[row] = 0.0
        self._groups[row] = self._kinds[row] = -1
        self._keys[row] = None
        self._free.append(row)

    def search(
        self,
        query: str,
        query_vector: Vectors,
        *,
        groups: Collection[str] | None,
        kinds: Collection[str] | None,
        limit: int,
    ) -> list[tuple[str, float]]:
        """The best ``limit`` keys, scores in (0, 1], best first."""
        if limit <= 0 or not self._rows:
            return []
        # Lexical scores as the shared ranking gives them, as the file layer reports them: the
        # same relative cuts (context selection) then mean the same on both layers.
        hits = [(str(key), score) for key, score in
                self.lexical.search(query, groups=groups, kinds=kinds, limit=limit)]
        if len(hits) < limit:
            found = {key for key, _ in hits}
            below = hits[-1][1] if hits else 1.0  # vector-only hits rank under every match
            hits += [(key, VECTOR_WEIGHT * below * similarity)
                     for key, similarity in self._nearest(query_vector, groups, kinds, limit)
                     if key not in found][: limit - len(hits)]
        return hits

    def _nearest(
        self, query_vector: Vectors, groups: Collection[str] | None,
        kinds: Collection[str] | None, limit: int,
    ) -> list[tuple[str, float]]:
        """The ``limit`` nearest keys with cosine >= ``VECTOR_ONLY_MIN``, nearest first: enough
        to fill what the lexical hits (at most ``limit``, maybe among these) leave over."""
        # einsum, not `@`: BLAS would spread this small product over threads, and on a busy
        # machine their wake-ups cost 10-50 times the arithmetic (measured 0.05 vs 1-6 ms).
        similarity = np.einsum("ij,j->i", self._vectors, query_vector)
        mask = (self._groups >= 0) & (similarity >= VECTOR_ONLY_MIN)
        if groups is not None:
            mask &= np.isin(self._groups, [self._codes.get(g, -2) for g in groups])
        if kinds is not None:
            mask &= np.isin(self._kinds, [self._codes.get(k, -2) for k in kinds])
        rows = np.flatnonzero(mask)
        best = rows[np.argsort(-similarity[rows], kind="stable")[:limit]]
        return [(str(self._keys[row]), min(1.0, float(similarity[row]))) for row in best]

    def _code(self, name: str) -> int:
        # Groups and kinds share one code table; a filter only compares codes of its own field.
        return self._codes.setdefault(name, len(self._codes))

    def _grow(self) -> int:
        row = len(self._keys)
        if row == len(self._vectors):
            capacity = max(64, 2 * row)
            self._vectors = np.resize(self._vectors, (capacity, self._vectors.shape[1]))
            self._vectors[row:] = 0.0
            self._groups = np.resize(self._groups, capacity)
            self._kinds = np.resize(self._kinds, capacity)
            self._groups[row:] = self._kinds[row:] = -1
        self._keys.append(None)
        return row
