"""The graph layer's search index: the shared ``TextIndex``, and below its matches the
nearest stored vectors (a hybrid that never reorders lexical matches; see ``VECTOR_WEIGHT``).

Kept current by our own writes (we are the only read-write process), so it cannot lose a
document the way Kùzu's full-text index does, and it does not depend on the database's
full-text extension (LadybugDB does not bundle it). It also keeps each episode as stored, so a
search answers without a Kùzu lookup per hit.

It lives in ``<graph>/index.sqlite3``, a derived cache: an open uses it as it is when it is of
this version and embedder, says no write was left half done (``begin`` marks one, ``put`` and
``drop`` settle it), holds as many episodes as the graph, and carries the token the graph
recorded when it was last built, and its vectors (``vectors.py``, ``vectors.f32`` beside it)
are stamped with that token and hold every row it points at; else it is emptied and built again
from the rows. A read-only graph builds it in memory.

Its collaborators: ``TextIndex`` (the words), ``VectorRows`` (``nearest.py``: the vector file
and its rows) and ``IndexedEpisodes`` (``indexed.py``: the episodes as stored, read back).
"""

from __future__ import annotations

import contextlib
import sqlite3
import uuid
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from backends import threads
from backends.errors import WriteFailed
from backends.graph.embedder import Vectors
from backends.graph.indexed import IndexedEpisodes
from backends.graph.nearest import VECTOR_ONLY_MIN, VectorRows
from backends.graph.vectors import FILE as VECTOR_FILE
from backends.graph.vectors import VectorFile
from backends.model import Episode
from backends.search.textindex import VERSION as TEXT_VERSION
from backends.search.textindex import Document, TextIndex

FILE = "index.sqlite3"
VERSION = f"4.{TEXT_VERSION}"
# Measured on LoCoMo dev (bench/graph_layer.py): these hashing vectors alone reach R@10 0.42
# against 0.64 lexical, and no weighted sum of the two (weights 0.001 to 0.5) beat lexical alone.
# So vectors never reorder lexical matches: they add near-duplicates below them that no query
# term reaches. A semantic embedder (see embedder.Embedder) would make this part earn more.
VECTOR_WEIGHT = 0.05  # a vector-only hit scores at most this share of the weakest lexical match

_SCHEMA = """
CREATE TABLE IF NOT EXISTS gx_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS gx_episodes (
    key TEXT PRIMARY KEY, grp TEXT NOT NULL, kind TEXT NOT NULL, vrow INTEGER NOT NULL,
    doc BLOB NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS gx_places ON gx_episodes (grp, kind);
CREATE UNIQUE INDEX IF NOT EXISTS gx_rows ON gx_episodes (vrow);
-- Rows of the vector file below the highest in use that no key points at: reused first.
CREATE TABLE IF NOT EXISTS gx_free (vrow INTEGER PRIMARY KEY);
"""


@dataclass(frozen=True, slots=True)
class Entry:
    episode: Episode
    text: str
    vector: Vectors


class EpisodeIndex:
    def __init__(self, db: sqlite3.Connection, path: Path | None, dimension: int,
                 vectors: VectorFile) -> None:
        self._db = db
        self.path = path
        self.lexical = TextIndex(db)
        self._vectors = VectorRows(db, vectors, dimension)
        """row ``vrow`` of ``gx_episodes`` is the episode's vector"""
        self._episodes = IndexedEpisodes(db, path or Path(FILE))

    @classmethod
    def open(cls, folder: Path | None, dimension: int, embedder: str) -> EpisodeIndex:
        """The index in ``folder`` (None: in memory), emptied unless it is of this version and
        ``embedder``: ``current`` then says whether it may be used as it is."""
        path = None if folder is None else folder / FILE
        want = {"version": VERSION, "embedder": f"{embedder}/{dimension}"}
        if path is not None:
            try:
                index = cls._connect(path, dimension)
                if index._meta("version") == want["version"] and index._meta(
                        "embedder") == want["embedder"]:
                    return index
                index.close()
            except sqlite3.Error:
                pass
            for leftover in (path, path.with_name(FILE + "-wal"), path.with_name(FILE + "-shm"),
                             path.with_name(VECTOR_FILE)):
                leftover.unlink(missing_ok=True)
        index = cls._connect(path, dimension)
        with index._transaction():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    index._db.execute(statement)
            TextIndex.create(index._db)
            threads.create(index._db)
            index._db.executemany("INSERT OR REPLACE INTO gx_meta VALUES (?, ?)", want.items())
        return index

    @classmethod
    def _connect(cls, path: Path | None, dimension: int) -> EpisodeIndex:
        db = sqlite3.connect(":memory:" if path is None else path, isolation_level=None,
                             check_same_thread=False, timeout=30.0)
        try:
            if path is not None:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")  # a lost commit leaves it unsettled
            vectors = VectorFile.open(None if path is None else path.with_name(VECTOR_FILE),
                                      dimension)
        except BaseException:
            db.close()
            raise
        return cls(db, path, dimension, vectors)

    def current(self, token: str | None, count: int) -> bool:
        """The index may be used as it is for a graph that recorded ``token`` and holds
        ``count`` episodes."""
        try:
            return (token is not None and self._meta("token") == token
                    and self._meta("unsettled") is None and len(self) == count
                    and self._vectors.current(token))
        except sqlite3.Error:
            return False

    def rebuilt(self, entries: Sequence[Entry]) -> str:
        """Empty the index, fill it with ``entries``; returns the token the graph records."""
        token = uuid.uuid4().hex
        entries = _last_of_each(entries)
        self._vectors.replace(token, [e.vector for e in entries])
        with self._transaction():
            self._db.execute("DELETE FROM gx_episodes")
            self._db.execute("DELETE FROM gx_free")
            self._episodes.emptied()
            self.lexical.clear()
            threads.clear(self._db)
            self._db.execute("DELETE FROM gx_meta WHERE key IN ('token', 'unsettled')")
            self._index(entries, list(range(len(entries))))
            self._db.execute("INSERT INTO gx_meta VALUES ('token', ?)", (token,))
        return token

    def close(self) -> None:
        self._db.close()
        self._vectors.close()

    def __len__(self) -> int:
        return len(self.lexical)

    def __contains__(self, key: str) -> bool:
        return self._episodes.contains(key)

    def begin(self) -> None:
        """Mark a write to the graph as under way: should it never reach ``put`` or ``drop``
        (a crash), the next open builds the index again."""
        # Durable before the graph changes (a lost mark would leave a stale index settled).
        with self._refused_as_write_failed():
            self._db.execute("PRAGMA synchronous=FULL")
            try:
                with self._transaction():
                    self._db.execute("INSERT OR REPLACE INTO gx_meta VALUES ('unsettled', '1')")
            finally:
                self._db.execute("PRAGMA synchronous=NORMAL")

    def put(self, entries: Sequence[Entry]) -> None:
        """Index (or re-index) each entry; settles a write ``begin`` marked."""
        with self._refused_as_write_failed():
            with self._transaction():
                left = self._put(entries)
                self._settle()
            self._vectors.clear(left)

    def drop(self, key: str) -> None:
        with self._refused_as_write_failed():
            with self._transaction():
                left = list(self._episodes.rows_of([key]).values())
                self._db.execute("DELETE FROM gx_episodes WHERE key = ?", (key,))
                self._vectors.free(left)
                self._episodes.changed([key])
                self.lexical.remove(key)
                threads.drop(self._db, [key])
                self._settle()
            self._vectors.clear(left)

    def search(
        self,
        query: str,
        *,
        groups: Collection[str] | None,
        kinds: Collection[str] | None,
        limit: int,
    ) -> list[tuple[str, float]]:
        """The best ``limit`` keys by their words, scores in (0, 1], best first."""
        if limit <= 0:
            return []
        # Lexical scores as the shared ranking gives them, as the file layer reports them: the
        # same relative cuts (context selection) then mean the same on both layers.
        return threads.lift(self._db, [(str(key), score) for key, score in self.lexical.search(
            query, groups=groups, kinds=kinds, limit=limit)], limit)

    def neighbours(
        self,
        hits: list[tuple[str, float]],
        query_vector: Vectors,
        *,
        groups: Collection[str] | None,
        kinds: Collection[str] | None,
        limit: int,
        floor: float = VECTOR_ONLY_MIN,
        in_context: bool = False,
    ) -> list[tuple[str, float]]:
        """``hits`` (``search``'s) filled up to ``limit`` with the nearest vectors of cosine
        >= ``floor`` (``VectorRows.nearest``), each below every match."""
        if len(hits) >= limit or not len(self):
            return hits
        below = hits[-1][1] if hits else 1.0
        return hits + [(key, VECTOR_WEIGHT * below * similarity) for key, similarity in
                       self._vectors.nearest(query_vector, groups, kinds, limit - len(hits),
                                             {key for key, _ in hits}, floor,
                                             in_context=in_context)]

    def episode(self, key: str) -> Episode | None:
        """``IndexedEpisodes.episode``"""
        return self._episodes.episode(key)

    def places(self) -> Iterator[tuple[str, str, str]]:
        """``IndexedEpisodes.places``"""
        return self._episodes.places()

    def ids_starting(self, prefix: str, groups: Collection[str] | None) -> list[str]:
        """``IndexedEpisodes.ids_starting``"""
        return self._episodes.ids_starting(prefix, groups)

    def located(self, keys: Collection[str]) -> dict[str, tuple[str, str]]:
        """``IndexedEpisodes.located``"""
        return self._episodes.located(keys)

    def group_size(self, group: str) -> int:
        """``IndexedEpisodes.group_size``"""
        return self._episodes.group_size(group)

    def _put(self, entries: Sequence[Entry]) -> list[int]:
        """Index ``entries`` (their vectors in fresh rows); returns the rows they left."""
        entries = _last_of_each(entries)
        left = list(self._episodes.rows_of([e.episode.id for e in entries]).values())
        fresh = self._vectors.write([e.vector for e in entries])
        self._index(entries, fresh)
        self._vectors.free(left)
        return left

    def _index(self, entries: Sequence[Entry], rows: Sequence[int]) -> None:
        """Index ``entries``, whose vectors are at ``rows``."""
        self._episodes.changed(e.episode.id for e in entries)
        self.lexical.add_many(Document(e.episode.id, e.text, e.episode.group_id, e.episode.kind)
                              for e in entries)
        threads.put(self._db, (e.episode for e in entries))
        self._db.executemany("INSERT OR REPLACE INTO gx_episodes VALUES (?, ?, ?, ?, ?)", (
            (e.episode.id, e.episode.group_id, e.episode.kind, row,
             orjson.dumps(e.episode.to_json()))
            for e, row in zip(entries, rows, strict=True)))

    def _settle(self) -> None:
        self._db.execute("DELETE FROM gx_meta WHERE key = 'unsettled'")

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM gx_meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    @contextlib.contextmanager
    def _refused_as_write_failed(self) -> Iterator[None]:
        """The index file refusing a write (a full disk) as ``WriteFailed``. Before the graph is
        written (``begin``) nothing is stored; after (``put``, ``drop``) the graph holds the
        write and the mark left unsettled rebuilds the index at the next open."""
        try:
            yield
        except (sqlite3.OperationalError, OSError) as exc:  # OSError: the vector file
            raise WriteFailed(f"graph layer: its search index {self.path or FILE}: {exc}") from exc

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


def _last_of_each(entries: Sequence[Entry]) -> list[Entry]:
    """``entries`` with one per key, the last (as writing them in turn would leave)."""
    return list({entry.episode.id: entry for entry in entries}.values())


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *_: object) -> None:
        self._db.execute("ROLLBACK" if kind is not None else "COMMIT")
