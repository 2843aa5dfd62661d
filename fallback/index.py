"""The file layer's index: a SQLite cache of what the episode files hold, shared by every process.

    <root>/index.sqlite3 (+ -wal, -shm)

The files are the truth; this is derived from them and can be deleted at any time (the next
open builds it again). It holds, per episode, its document, where its file is and that file's
signature, its content hash, its view bullet, and the search index (``backends.search.textindex``).
Two parts read and keep the rest over the same connection: ``pages``, the views' order
(``fallback.view_order``), and ``files``, what the files looked like when the index last agreed
with them, and the files found unusable (``fallback.file_record``).

It is also the journal's position: every change (an episode written, replaced or deleted, by
dualmem or found on disk) takes the next ``seq``, and deletes are kept as ``gone`` rows, so a
consumer such as the graph asks for ``changes_since`` its last position instead of rescanning.
A position is only meaningful within one ``epoch``: a rebuilt index starts a new one.

Every writer changes the files and then this index under the file layer's cross-process lock;
readers never take that lock (SQLite's WAL gives them a consistent snapshot).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from backends import id_prefix, threads
from backends.errors import StoreCorrupt
from backends.flock import flocked
from backends.model import Episode
from backends.protocol import Changes, Position
from backends.search.expansion import linked
from backends.search.ranking import search_text
from backends.search.textindex import VERSION as TEXT_VERSION
from backends.search.textindex import Document, TextIndex
from fallback import entities, views
from fallback.file_links import FILE as FILE  # where others read it
from fallback.file_links import LAYOUT
from fallback.file_record import FileRecord, Signature
from fallback.file_record import signature as signature  # where the tests and others read it
from fallback.layout import VIEW_FILES, file_name
from fallback.view_order import ViewEntry as ViewEntry  # likewise
from fallback.view_order import ViewOrder

SCHEMA_VERSION = f"{LAYOUT}.{TEXT_VERSION}"  # a change of either layout rebuilds the index

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS episodes (
    id TEXT PRIMARY KEY, group_id TEXT NOT NULL, kind TEXT NOT NULL, created_at TEXT NOT NULL,
    file TEXT NOT NULL, sig TEXT NOT NULL, hash TEXT NOT NULL, seq INTEGER NOT NULL,
    bullet TEXT, hand INTEGER NOT NULL, starts INTEGER NOT NULL, doc BLOB NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS episodes_by_time ON episodes (created_at, id);
CREATE INDEX IF NOT EXISTS episodes_by_group ON episodes (
    group_id, kind, created_at, id, hand, bullet);
CREATE INDEX IF NOT EXISTS episodes_by_seq ON episodes (seq);
CREATE INDEX IF NOT EXISTS episodes_by_hand ON episodes (group_id, kind) WHERE hand = 1;
CREATE INDEX IF NOT EXISTS episodes_by_page ON episodes (group_id, kind, created_at, id)
    WHERE starts = 1;
CREATE INDEX IF NOT EXISTS episodes_by_file ON episodes (group_id, file);
CREATE TABLE IF NOT EXISTS gone (id TEXT PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS gone_by_seq ON gone (seq);
CREATE TABLE IF NOT EXISTS folders (path TEXT PRIMARY KEY, mtime INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS views (path TEXT PRIMARY KEY, sig TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS problems (path TEXT PRIMARY KEY, reason TEXT NOT NULL) WITHOUT ROWID;
"""


def time_key(value: datetime) -> str:
    """A UTC time as text that sorts as the time does (fixed width, microseconds always)."""
    return f"{value:%Y-%m-%dT%H:%M:%S.%f}"


class Row(NamedTuple):
    """What a write records of one episode."""

    episode: Episode
    signature: Signature
    content_hash: str
    bullet: str | None
    hand: bool
    starts: bool
    """its generated bullet starts a later page of its view (``views.starts_page``)"""

    @classmethod
    def of(cls, episode: Episode, sig: Signature) -> Row:
        """The row of ``episode`` stored in a file of signature ``sig``."""
        shown = episode.kind in VIEW_FILES
        hand = shown and views.is_hand_shaped(episode)
        return cls(episode, sig, episode.content_hash(),
                   views.bullet(episode) if shown else None,
                   hand, shown and not hand and views.starts_page(episode.id))


def _connection(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    # Durable enough for a cache: a lost last commit leaves a folder whose mtime disagrees,
    # which the next open re-reads.
    db.execute("PRAGMA synchronous=NORMAL")
    return db


class FileIndex:
    """One connection to ``<root>/index.sqlite3``, shared by the caller's threads."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.path = path
        self._db = db
        self._lock = threading.RLock()
        self.text = TextIndex(db)
        self.pages = ViewOrder(db, self._lock)
        self.files = FileRecord(db, self._lock, self.transaction)

    @classmethod
    def open(cls, root: Path, *, writable: bool = True) -> tuple[FileIndex, bool]:
        """Open the index under ``root``; returns it and whether it was made new (empty, to be
        filled from the files). A damaged or foreign index is replaced by a new one; without
        ``writable`` (a read-only or full home) a new index is built in memory."""
        path = root / FILE
        if not writable:
            # Built from the files: the index on disk cannot be trusted read-only (its last
            # commits may wait in a WAL that an immutable reader does not see).
            return cls._create(sqlite3.connect(":memory:", isolation_level=None,
                                               check_same_thread=False), path), True
        index = cls._current_at(path)
        if index is not None:
            return index, False
        # One replacer at a time. Before, a process that opened the index while another was
        # creating it (its tables not yet committed) took it for damaged and unlinked it, with
        # its WAL, under the other: "database disk image is malformed" (6 writers opening a
        # new home at once: 9 of 120 failed).
        with flocked(root):
            # Another process may have made it while this one waited: it is not to be unlinked.
            index = cls._current_at(path)
            if index is not None:
                return index, False
            for leftover in (path, path.with_name(FILE + "-wal"), path.with_name(FILE + "-shm")):
                leftover.unlink(missing_ok=True)
            db = _connection(path)
            db.execute("PRAGMA journal_mode=WAL")  # kept in the file: set once, by its creator
            return cls._create(db, path), True

    @classmethod
    def existing(cls, root: Path) -> FileIndex | None:
        """The index under ``root`` when it is there and current, else None (``open`` makes
        one, to be filled from the files): for a reader that needs nothing the files hold
        beyond what the index does."""
        return cls._current_at(root / FILE)

    @classmethod
    def _current_at(cls, path: Path) -> FileIndex | None:
        """The index at ``path`` when it is there and current."""
        index = cls._connect(path)
        if index is not None and not index._current():
            index.close()
            return None
        return index

    @classmethod
    def _connect(cls, path: Path) -> FileIndex | None:
        if not path.exists():
            return None
        try:
            # Read only, no journal_mode: a file another process is still creating converted
            # under it made the creator's own conversion fail at once, without waiting, with
            # "database is locked" (11 of 6,000 openers of new homes, six at a time).
            db = _connection(path)
        except sqlite3.Error:
            return None
        return cls(db, path)

    @classmethod
    def _create(cls, db: sqlite3.Connection, path: Path) -> FileIndex:
        import uuid  # only a new index mints its epoch

        index = cls(db, path)
        with index.transaction():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            TextIndex.create(db)
            entities.create(db)
            threads.create(db)
            db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [
                ("schema", SCHEMA_VERSION), ("epoch", uuid.uuid4().hex), ("seq", "0")])
        return index

    def _current(self) -> bool:
        """The index is ours, of this schema, in WAL mode, and SQLite can read it."""
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            self._db.execute("SELECT count(*) FROM lex_stats").fetchone()
            mode = self._db.execute("PRAGMA journal_mode").fetchone()[0]
        except sqlite3.Error:
            return False
        return row is not None and row[0] == SCHEMA_VERSION and mode == "wal"

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def compact(self) -> None:
        """Rewrite the database and empty its write-ahead log, so that no free page keeps the
        bytes of what was deleted (a purge)."""
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("VACUUM")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic change of the index (re-entrant within a thread)."""
        with self._lock:
            if self._db.in_transaction:
                yield
                return
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- the journal ------------------------------------------------------------------------

    def position(self) -> Position:
        with self._lock:
            meta = dict(self._db.execute(
                "SELECT key, value FROM meta WHERE key IN ('epoch', 'seq')").fetchall())
        return Position(meta["epoch"], int(meta["seq"]))

    def changes_since(self, position: Position | None, limit: int = 5000) -> Changes:
        """At most ``limit`` changes after ``position`` (None: from the journal's start)."""
        current = self.position()
        if position is not None and (position.epoch != current.epoch
                                     or position.seq > current.seq):
            return Changes(current, [], [], reset=True)
        after = 0 if position is None else position.seq
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, id, 1 FROM episodes WHERE seq > ?1 UNION ALL"
                " SELECT seq, id, 0 FROM gone WHERE seq > ?1 ORDER BY 1 LIMIT ?2",
                (after, limit)).fetchall()
        if not rows:
            return Changes(current, [], [])
        last = rows[-1][0] if len(rows) == limit else current.seq
        return Changes(Position(current.epoch, last),
                       [row[1] for row in rows if row[2]], [row[1] for row in rows if not row[2]])

    def _next_seq(self) -> int:
        seq = int(self._db.execute("SELECT value FROM meta WHERE key = 'seq'").fetchone()[0]) + 1
        self._db.execute("UPDATE meta SET value = ? WHERE key = 'seq'", (str(seq),))
        return seq

    # -- episodes ---------------------------------------------------------------------------

    def put(self, rows: Sequence[Row]) -> None:
        """Record these episodes as stored (each replaces the same id), each a new change."""
        import orjson  # a write's: reads need not load it

        with self.transaction():
            for row in rows:
                e = row.episode
                self._db.execute("DELETE FROM gone WHERE id = ?", (e.id,))
                self._db.execute(
                    "INSERT OR REPLACE INTO episodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (e.id, e.group_id, e.kind, time_key(e.created_at), file_name(e.id),
                     row.signature,
                     row.content_hash, self._next_seq(), row.bullet, int(row.hand),
                     int(row.starts), orjson.dumps(e.to_json())))
            self.text.add_many(Document(r.episode.id, search_text(r.episode), r.episode.group_id,
                                        r.episode.kind) for r in rows)
            entities.put(self._db, [row.episode for row in rows])
            threads.put(self._db, [row.episode for row in rows])

    def drop(self, episode_ids: Collection[str]) -> None:
        """Record these ids as deleted (unknown ones are ignored), each a new change."""
        with self.transaction():
            for episode_id in episode_ids:
                deleted = self._db.execute("DELETE FROM episodes WHERE id = ?", (episode_id,))
                if deleted.rowcount:
                    self._db.execute("INSERT OR REPLACE INTO gone VALUES (?, ?)",
                                     (episode_id, self._next_seq()))
            self.text.remove_many(episode_ids)
            entities.drop(self._db, episode_ids)
            threads.drop(self._db, episode_ids)

    def get(self, episode_id: str) -> Episode | None:
        with self._lock:
            row = self._db.execute("SELECT doc FROM episodes WHERE id = ?",
                                   (episode_id,)).fetchone()
        return None if row is None else self._episode(row[0])

    def located(self, episode_id: str) -> tuple[str, str, Signature] | None:
        """(group, kind, file signature) of the stored episode of this id."""
        with self._lock:
            row = self._db.execute("SELECT group_id, kind, sig FROM episodes WHERE id = ?",
                                   (episode_id,)).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def deleted(self) -> set[str]:
        """Ids whose deletion the journal records (and that were not written again since)."""
        with self._lock:
            return {row[0] for row in self._db.execute("SELECT id FROM gone")}

    def hashes(self) -> dict[str, str]:
        """id -> content hash of every episode."""
        with self._lock:
            return dict(self._db.execute("SELECT id, hash FROM episodes").fetchall())

    def select(
        self,
        group_ids: Collection[str] | None = None,
        kinds: Collection[str] | None = None,
        batch: int | None = None,
        newest_first: bool = False,
    ) -> Iterator[Episode]:
        """The matching episodes ordered by (created_at, id), or the reverse with
        ``newest_first``, read in batches (``batch`` at a time; by default small newest first,
        whose caller wants a few)."""
        batch = batch or (32 if newest_first else 500)
        where, params = _filters(group_ids, kinds)
        if where is None:
            return
        beyond, order = ("<", "DESC") if newest_first else (">", "ASC")
        after: tuple[str, ...] = ()  # the first batch starts at either end
        while True:
            past = f" AND (created_at, id) {beyond} (?, ?)" if after else ""
            with self._lock:
                rows = self._db.execute(
                    f"SELECT created_at, id, doc FROM episodes WHERE {where}{past}"
                    f" ORDER BY created_at {order}, id {order} LIMIT ?",
                    (*params, *after, batch)).fetchall()
            for row in rows:
                yield self._episode(row[2])
            if len(rows) < batch:
                return
            after = (rows[-1][0], rows[-1][1])

    def ids_starting(self, prefix: str, group_ids: Collection[str] | None = None) -> list[str]:
        """The ids of ``group_ids`` (None: all) that start with ``prefix``, sorted: a range of
        the id's own index (``backends.id_prefix``)."""
        with self._lock:
            return id_prefix.ids_starting(self._db, "episodes", "id", "group_id", prefix,
                                          group_ids)

    def count(self, group_ids: Collection[str] | None = None,
              kinds: Collection[str] | None = None) -> int:
        where, params = _filters(group_ids, kinds)
        if where is None:
            return 0
        with self._lock:
            return int(self._db.execute(f"SELECT count(*) FROM episodes WHERE {where}",
                                        params).fetchone()[0])

    def search(self, query: str, group_ids: Collection[str] | None,
               kinds: Collection[str] | None, limit: int) -> list[tuple[Episode, float]]:
        with self._lock:
            ranked = threads.lift(self._db, self.text.search(
                query, groups=group_ids, kinds=kinds, limit=limit), limit)
            found = []
            for key, score in ranked:
                row = self._db.execute("SELECT doc FROM episodes WHERE id = ?", (key,)).fetchone()
                if row is not None:
                    found.append((self._episode(row[0]), score))
        return found

    def linked(self, query: str, group_ids: Collection[str] | None,
               kinds: Collection[str] | None) -> dict[str, float]:
        """Episode id -> link strength, for the memories the query's entities name."""
        with self._lock:
            return linked(entities.JournalLinks(self._db), query, group_ids, kinds)

    def _episode(self, doc: bytes) -> Episode:
        try:
            return Episode.model_validate_json(doc)
        except ValueError as exc:
            raise StoreCorrupt(self.path, f"an indexed episode does not parse: {exc}") from exc

def _filters(
    group_ids: Collection[str] | None, kinds: Collection[str] | None
) -> tuple[str | None, list[str]]:
    """A WHERE clause and its parameters; None when a filter is empty (nothing matches)."""
    clauses: list[str] = ["1"]
    params: list[str] = []
    for column, values in (("group_id", group_ids), ("kind", kinds)):
        if values is None:
            continue
        if not values:
            return None, []
        clauses.append(f"{column} IN ({','.join('?' * len(values))})")
        params.extend(values)
    return " AND ".join(clauses), params
