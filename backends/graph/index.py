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
"""

from __future__ import annotations

import contextlib
import sqlite3
import uuid
from collections import OrderedDict
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from backends import threads
from backends.errors import StoreCorrupt, WriteFailed
from backends.graph.embedder import Vectors
from backends.graph.vectors import FILE as VECTOR_FILE
from backends.graph.vectors import VectorFile
from backends.model import Episode
from backends.textindex import VERSION as TEXT_VERSION
from backends.textindex import Document, TextIndex

FILE = "index.sqlite3"
VERSION = f"4.{TEXT_VERSION}"
DECODED = 4096  # episodes kept decoded: a few contexts' worth, a few MB
# Measured on LoCoMo dev (bench/graph_layer.py): these hashing vectors alone reach R@10 0.42
# against 0.64 lexical, and no weighted sum of the two (weights 0.001 to 0.5) beat lexical alone.
# So vectors never reorder lexical matches: they add near-duplicates below them that no query
# term reaches. A semantic embedder (see embedder.Embedder) would make this part earn more.
VECTOR_WEIGHT = 0.05  # a vector-only hit scores at most this share of the weakest lexical match
# Hashed words collide (1 in 128 dimensions), so a random string reaches cosine 0.5 with some
# short document in 1-2% of queries on LoCoMo; at 0.6 "no match" stays an empty answer.
VECTOR_ONLY_MIN = 0.6
LOOKUP = 256  # vector candidates looked up at once (their keys, groups and kinds)

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
        self._dimension = dimension
        self._vectors = vectors
        """row ``vrow`` of ``gx_episodes`` is the episode's vector"""
        self._decoded: OrderedDict[str, Episode] = OrderedDict()
        """episodes recently read, decoded (only this index writes its rows)"""
        self._places: dict[str, tuple[str, str]] = {}
        """(group, kind) of the episodes ``located`` so far: entity links ask for the same
        ones at every search"""
        self._sizes: dict[str, int] = {}

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
                    and self._vectors.stamp() == token and self._vectors.rows() >= self._high())
        except sqlite3.Error:
            return False

    def rebuilt(self, entries: Sequence[Entry]) -> str:
        """Empty the index, fill it with ``entries``; returns the token the graph records."""
        token = uuid.uuid4().hex
        entries = _last_of_each(entries)
        matrix = (np.stack([e.vector for e in entries]) if entries
                  else np.zeros((0, self._dimension), dtype=np.float32))
        self._vectors.close()
        try:
            self._vectors = VectorFile.create(self._vectors.path, self._dimension, token, matrix)
        except OSError:  # no room for the file: this process searches a copy in memory, and
            # the next open, finding no file of this token, builds again
            self._vectors = VectorFile.create(None, self._dimension, token, matrix)
        with self._transaction():
            self._db.execute("DELETE FROM gx_episodes")
            self._db.execute("DELETE FROM gx_free")
            self._decoded.clear()
            self._places.clear()
            self._sizes.clear()
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
        if not _storable(key):
            return False
        return self._db.execute("SELECT 1 FROM gx_episodes WHERE key = ?",
                                (key,)).fetchone() is not None

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
            self._clear(left)

    def drop(self, key: str) -> None:
        with self._refused_as_write_failed():
            with self._transaction():
                left = list(self._rows_of([key]).values())
                self._db.execute("DELETE FROM gx_episodes WHERE key = ?", (key,))
                self._db.executemany("INSERT INTO gx_free VALUES (?)", ((r,) for r in left))
                self._decoded.pop(key, None)
                self._places.pop(key, None)
                self._sizes.clear()
                self.lexical.remove(key)
                threads.drop(self._db, [key])
                self._settle()
            self._clear(left)

    def episode(self, key: str) -> Episode | None:
        """The indexed episode ``key``. Recently read ones are kept decoded (a context's four
        to six searches find mostly the same few dozen, each a row read and checked)."""
        if (found := self._decoded.get(key)) is not None:
            self._decoded.move_to_end(key)
            return found
        if not _storable(key):
            return None
        row = self._db.execute("SELECT doc FROM gx_episodes WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            found = Episode.model_validate_json(row[0])
        except ValueError as exc:
            raise StoreCorrupt(self.path or Path(FILE), f"an indexed episode: {exc}") from exc
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
        listed = [key for key in keys if key not in found and _storable(key)]
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
    ) -> list[tuple[str, float]]:
        """``hits`` (``search``'s) filled up to ``limit`` with the nearest vectors of cosine
        >= ``floor``, each below every match."""
        if len(hits) >= limit or not len(self):
            return hits
        below = hits[-1][1] if hits else 1.0
        return hits + [(key, VECTOR_WEIGHT * below * similarity) for key, similarity in
                       self._nearest(query_vector, groups, kinds, limit - len(hits),
                                     {key for key, _ in hits}, floor)]

    def _nearest(
        self, query_vector: Vectors, groups: Collection[str] | None,
        kinds: Collection[str] | None, wanted: int, found: Collection[str], floor: float,
    ) -> list[tuple[str, float]]:
        """The ``wanted`` nearest keys not in ``found``, of ``groups`` and ``kinds``, with
        cosine >= ``floor``, nearest first (ties by key: any row order answers
        alike). One product over the stored matrix; only its candidates are looked up."""
        # Rounded: the same vector gives the same similarity in any row.
        similarity = np.round(self._vectors.similarities(query_vector, self._high()), 6)
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

    def _keys_of(self, rows: list[int]) -> list[tuple[int, str, str, str]]:
        """(row, key, group, kind) of the episodes at ``rows`` (a row no key points at: none)."""
        return self._db.execute(
            "SELECT vrow, key, grp, kind FROM gx_episodes"
            f" WHERE vrow IN ({','.join('?' * len(rows))})", rows).fetchall()

    def _put(self, entries: Sequence[Entry]) -> list[int]:
        """Index ``entries`` (their vectors in fresh rows); returns the rows they left."""
        entries = _last_of_each(entries)
        left = list(self._rows_of([e.episode.id for e in entries]).values())
        fresh = self._allocate(len(entries))
        if entries:
            # Before the commit that points the keys at them: a reader never meets these rows
            # half written under a key.
            self._vectors.write(fresh, np.stack([e.vector for e in entries]))
        self._index(entries, fresh)
        self._db.executemany("INSERT INTO gx_free VALUES (?)", ((row,) for row in left))
        return left

    def _index(self, entries: Sequence[Entry], rows: Sequence[int]) -> None:
        """Index ``entries``, whose vectors are at ``rows``."""
        self._sizes.clear()
        for entry in entries:
            self._decoded.pop(entry.episode.id, None)
            self._places.pop(entry.episode.id, None)
        self.lexical.add_many(Document(e.episode.id, e.text, e.episode.group_id, e.episode.kind)
                              for e in entries)
        threads.put(self._db, (e.episode for e in entries))
        self._db.executemany("INSERT OR REPLACE INTO gx_episodes VALUES (?, ?, ?, ?, ?)", (
            (e.episode.id, e.episode.group_id, e.episode.kind, row,
             orjson.dumps(e.episode.to_json()))
            for e, row in zip(entries, rows, strict=True)))

    def _rows_of(self, keys: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        listed = [key for key in keys if _storable(key)]
        for start in range(0, len(listed), 500):
            part = listed[start : start + 500]
            found.update(self._db.execute(
                f"SELECT key, vrow FROM gx_episodes WHERE key IN ({','.join('?' * len(part))})",
                part).fetchall())
        return found

    def _allocate(self, count: int) -> list[int]:
        """``count`` rows no key points at: free ones first, then past the highest."""
        high = self._high()
        free = [int(row) for (row,) in self._db.execute(
            "SELECT vrow FROM gx_free ORDER BY vrow LIMIT ?", (count,))]
        if free:
            self._db.execute("DELETE FROM gx_free WHERE vrow <= ?", (free[-1],))
        return free + list(range(high, high + count - len(free)))

    def _high(self) -> int:
        """One past the highest row in use or free: the rows a search reads."""
        (high,) = self._db.execute(
            "SELECT max(coalesce((SELECT max(vrow) FROM gx_episodes), -1),"
            " coalesce((SELECT max(vrow) FROM gx_free), -1))").fetchone()
        return int(high) + 1

    def _clear(self, rows: Sequence[int]) -> None:
        """Zero rows no key points at any more, so that they stop costing lookups; after the
        commit (a rollback leaves them pointed at). Failing leaves them to be skipped."""
        with contextlib.suppress(OSError):
            self._vectors.clear(rows)

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


def _storable(key: str) -> bool:
    """A key SQLite can take (no lone surrogate): no other can be indexed."""
    try:
        key.encode()
    except UnicodeEncodeError:
        return False
    return True


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *_: object) -> None:
        self._db.execute("ROLLBACK" if kind is not None else "COMMIT")
