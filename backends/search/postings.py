"""The postings of the lexical index as stored in ``lex_postings``: per (term, partition), chunks
of at most a chunk size of (document number, tf, length), packed as arrays, each with its front,
the (tf, length) pairs no other of its postings beats on both counts. Writing appends and drops
postings; reading gives a term's chunks unread with their bounds (``topk.Block``), or read."""

from __future__ import annotations

import bisect
import sqlite3
from array import array
from collections.abc import Sequence

from backends.search import topk

_MAX_U16 = 0xFFFF
_COLUMNS = "first, front, docs, tfs, lens"
_REPLACE = "INSERT OR REPLACE INTO lex_postings VALUES (?, ?, ?, ?, ?, ?, ?)"


def in_parts(sql: str, term: str, parts: set[int] | None) -> tuple[str, list[object]]:
    """``sql`` (which selects by term) limited to ``parts``, with its parameters."""
    if parts is None:
        return sql, [term]
    return f"{sql} AND part IN ({','.join('?' * len(parts))})", [term, *parts]


class _Chunk:
    # A plain class: a dataclass costs every one-shot search ~1 ms of CPU to make.
    __slots__ = ("docs", "first", "front", "lens", "tfs")

    def __init__(self, first: int, front: dict[int, int], docs: array[int], tfs: array[int],
                 lens: array[int]) -> None:
        self.first = first
        self.front = front  # tf -> the shortest length seen with it (pruned to the front)
        self.docs = docs
        self.tfs = tfs
        self.lens = lens

    @classmethod
    def new(cls, first: int) -> _Chunk:
        return cls(first, {}, array("I"), array("H"), array("H"))

    @classmethod
    def load(cls, row: Sequence[object]) -> _Chunk:
        first, front, docs, tfs, lens = row
        chunk = cls.new(int(first))  # type: ignore[call-overload]
        pairs = array("H")
        pairs.frombytes(front)  # type: ignore[arg-type]
        chunk.front = dict(zip(pairs[::2], pairs[1::2], strict=True))
        chunk.docs.frombytes(docs)  # type: ignore[arg-type]
        chunk.tfs.frombytes(tfs)  # type: ignore[arg-type]
        chunk.lens.frombytes(lens)  # type: ignore[arg-type]
        return chunk

    def append(self, doc: int, tf: int, size: int) -> None:
        self.docs.append(doc)
        self.tfs.append(tf)
        self.lens.append(size)
        if size < self.front.get(tf, _MAX_U16 + 1):
            self.front[tf] = size

    def row(self, term: str, part: int) -> tuple[object, ...]:
        """The chunk as stored. A removal leaves the front as it was: a looser bound, still
        a bound."""
        pairs, shortest = array("H"), _MAX_U16 + 1
        for tf in sorted(self.front, reverse=True):
            if self.front[tf] < shortest:
                shortest = self.front[tf]
                pairs.extend((tf, shortest))
        return (term, part, self.first, pairs.tobytes(), self.docs.tobytes(),
                self.tfs.tobytes(), self.lens.tobytes())


def append(db: sqlite3.Connection, term: str, part: int, entries: list[tuple[int, int, int]],
           *, chunk_size: int) -> None:
    """Add entries (document numbers above every stored one) after the last chunk."""
    row = db.execute(
        f"SELECT {_COLUMNS} FROM lex_postings WHERE term = ? AND part = ?"
        " ORDER BY first DESC LIMIT 1", (term, part)).fetchone()
    chunks = [_Chunk.load(row)] if row is not None else []
    for doc, tf, size in entries:
        if not chunks or len(chunks[-1].docs) >= chunk_size:
            chunks.append(_Chunk.new(doc))
        chunks[-1].append(doc, tf, size)
    db.executemany(_REPLACE, (chunk.row(term, part) for chunk in chunks))


def drop(db: sqlite3.Connection, term: str, part: int, gone: list[int]) -> None:
    """Remove these document numbers from the postings of (term, part)."""
    changed: dict[int, _Chunk] = {}
    for doc in sorted(gone):
        chunk = next((c for c in changed.values() if c.first <= doc
                      and c.docs and c.docs[-1] >= doc), None)
        if chunk is None:
            row = db.execute(
                f"SELECT {_COLUMNS} FROM lex_postings WHERE term = ? AND part = ?"
                " AND first <= ? ORDER BY first DESC LIMIT 1", (term, part, doc)).fetchone()
            if row is None:
                continue
            chunk = changed.setdefault(int(row[0]), _Chunk.load(row))
        at = bisect.bisect_left(chunk.docs, doc)
        if at < len(chunk.docs) and chunk.docs[at] == doc:
            del chunk.docs[at], chunk.tfs[at], chunk.lens[at]
    for chunk in changed.values():
        if chunk.docs:
            db.execute(_REPLACE, chunk.row(term, part))
        else:
            db.execute("DELETE FROM lex_postings WHERE term = ? AND part = ? AND first = ?",
                       (term, part, chunk.first))


def blocks(db: sqlite3.Connection, term: str, gain: float, parts: set[int] | None,
           norms: tuple[float, float], impacts: dict[bytes, float]) -> list[topk.Block]:
    """The chunks of ``term`` (in ``parts``) with their bounds, unread; ``impacts`` keeps
    ``topk.impact`` of each front met during one search."""
    # length() of a blob is read from the record header: the postings stay unread.
    sql = "SELECT part, first, length(tfs) / 2, front FROM lex_postings WHERE term = ?"
    found = []
    for part, first, size, front in db.execute(*in_parts(sql, term, parts)):
        bound = impacts.get(front)
        if bound is None:
            bound = impacts[front] = topk.impact(front, *norms)
        found.append(topk.Block(term, part, first, size, gain, gain * bound))
    return found


def read(db: sqlite3.Connection, term: str,
         parts: set[int] | None) -> dict[tuple[int, int], topk.Arrays]:
    """Every chunk of ``term`` (in ``parts``), read, by (partition, first document)."""
    sql = "SELECT part, first, docs, tfs, lens FROM lex_postings WHERE term = ?"
    found = {}
    for part, first, docs_blob, tfs_blob, lens_blob in db.execute(*in_parts(sql, term, parts)):
        docs, tfs, lens = array("I"), array("H"), array("H")
        docs.frombytes(docs_blob)
        tfs.frombytes(tfs_blob)
        lens.frombytes(lens_blob)
        found[part, first] = (docs, tfs, lens)
    return found
