"""The lexical index both layers search with, kept in SQLite and queried in place.

A text's folded, stemmed terms (``ranking.terms``) become postings, (document number, term
frequency, length), in chunks of at most ``CHUNK`` documents per (term, partition), packed as
arrays; partitions are (group, kind), so a filtered search never reads another group's postings.
Each chunk also keeps its front, the (tf, length) pairs no other of its postings beats on both
counts, from which a query bounds what the chunk can add before reading it (``topk``);
each document keeps its terms, so a candidate can be scored without walking postings.
The vocabulary with document frequencies is a B-tree, so prefix widening is a range read.
BM25 is computed at query time from what is stored (tf, length, df, N, total length): an index
updated incrementally answers exactly as one built again from the same texts. Opening costs a
connection; nothing grows in memory with the store. The chunks are written and read by
``postings``; what a query term matches in the vocabulary is ``widening``'s.

The caller owns the connection and its transactions: every method runs inside whatever
transaction is open, so a layer can change its own tables and this index atomically.
"""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Sequence
from typing import NamedTuple

from backends.search import postings, topk
from backends.search.postings import in_parts
from backends.search.ranking import K1, MAX_QUERY_TERMS, B, idf, terms
from backends.search.widening import Vocabulary

CHUNK = 512
VERSION = "4"
"""of the tables' layout and of the text taken in (ranking.search_text): an index of another
version is built again"""
DENSE_AFTER = 8
"""searches an index answers with the pure-Python scorer (``topk``) before it imports numpy for
``dense``, unless numpy is loaded already (as ``widening.TYPO_SCANS``, for the same reason)"""
_MAX_U16 = 0xFFFF

SCHEMA = """
CREATE TABLE IF NOT EXISTS lex_parts (
    part INTEGER PRIMARY KEY, grp TEXT NOT NULL, kind TEXT NOT NULL, UNIQUE (grp, kind));
CREATE TABLE IF NOT EXISTS lex_docs (
    doc INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, part INTEGER NOT NULL,
    length INTEGER NOT NULL, terms TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS lex_terms (term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lex_postings (
    term TEXT NOT NULL, part INTEGER NOT NULL, first INTEGER NOT NULL, front BLOB NOT NULL,
    docs BLOB NOT NULL, tfs BLOB NOT NULL, lens BLOB NOT NULL,
    PRIMARY KEY (term, part, first)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lex_stats (
    id INTEGER PRIMARY KEY CHECK (id = 0), docs INTEGER NOT NULL, length INTEGER NOT NULL,
    next_doc INTEGER NOT NULL);
INSERT OR IGNORE INTO lex_stats VALUES (0, 0, 0, 1);
"""


def _forward_text(counts: Counter[str]) -> str:
    """A document's terms as stored: `` term:tf term:tf ``, where ``topk`` finds a term's tf."""
    return "".join(f" {term}:{tf}" for term, tf in counts.items()) + " "


def _forward_terms(text: str) -> list[str]:
    return [entry.partition(":")[0] for entry in text.split()]


def _reference(term: str, variants: list[tuple[str, float]], n: int) -> float:
    """What ``term`` adds to the best score a document could reach: its own gain, or an
    unknown term's (a document could hold it)."""
    exact = next((gain for variant, gain in variants if variant == term), None)
    return exact if exact is not None else idf(n, 0) * (K1 + 1)


class Document(NamedTuple):
    key: str
    text: str
    group: str
    kind: str


class TextIndex:
    """The ``lex_*`` tables of one SQLite database."""

    def __init__(self, db: sqlite3.Connection, *, chunk: int = CHUNK,
                 dense: bool | None = None) -> None:
        self._db = db
        self._chunk = chunk  # postings per chunk written (tests make it small)
        self._vocabulary = Vocabulary(db)
        self._searches = 0
        self._dense = dense  # None: decided by _use_dense

    @staticmethod
    def create(db: sqlite3.Connection) -> None:
        """Create the tables if they are missing (inside the caller's transaction)."""
        for statement in SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)

    def __len__(self) -> int:
        return int(self._db.execute("SELECT docs FROM lex_stats").fetchone()[0])

    def __contains__(self, key: object) -> bool:
        found = self._db.execute("SELECT 1 FROM lex_docs WHERE key = ?", (key,))
        return found.fetchone() is not None

    def add(self, key: str, text: str, *, group: str, kind: str) -> None:
        """Index ``text`` under ``key``, replacing what ``key`` held before."""
        self.add_many([Document(key, text, group, kind)])

    def add_many(self, documents: Iterable[Document]) -> None:
        """``add`` of each document, the last of one key winning; postings of one (term,
        partition) are appended together, so a batch rewrites each chunk once."""
        latest = {document.key: document for document in documents}
        self.remove_many(latest)
        docs, length, next_doc = self._db.execute(
            "SELECT docs, length, next_doc FROM lex_stats").fetchone()
        added: dict[tuple[str, int], list[tuple[int, int, int]]] = defaultdict(list)
        df: Counter[str] = Counter()
        rows = []
        parts = self._parts_by_name()
        for document in latest.values():
            counts = Counter(terms(document.text))
            size = sum(counts.values())
            part = parts.get((document.group, document.kind))
            if part is None:
                part = parts[document.group, document.kind] = self._new_part(document)
            doc = next_doc
            next_doc += 1
            for term, tf in counts.items():
                added[term, part].append((doc, min(tf, _MAX_U16), min(size, _MAX_U16)))
            df.update(counts.keys())
            rows.append((doc, document.key, part, size, _forward_text(counts)))
            docs += 1
            length += size
        self._db.executemany("INSERT INTO lex_docs VALUES (?, ?, ?, ?, ?)", rows)
        self._db.executemany(
            "INSERT INTO lex_terms VALUES (?, ?) ON CONFLICT (term) DO UPDATE SET df = df + ?",
            ((term, n, n) for term, n in df.items()),
        )
        for (term, part), entries in added.items():
            postings.append(self._db, term, part, entries, chunk_size=self._chunk)
        self._db.execute("UPDATE lex_stats SET docs = ?, length = ?, next_doc = ?",
                         (docs, length, next_doc))

    def remove(self, key: str) -> None:
        self.remove_many([key])

    def remove_many(self, keys: Iterable[str]) -> None:
        """Forget these keys; unknown keys are ignored."""
        stored = []
        for key in keys:
            row = self._db.execute(
                "SELECT doc, part, length, terms FROM lex_docs WHERE key = ?", (key,)).fetchone()
            if row is not None:
                stored.append((key, *row))
        if not stored:
            return
        by_posting: dict[tuple[str, int], list[int]] = defaultdict(list)
        df: Counter[str] = Counter()
        for _key, doc, part, _length, text in stored:
            for term in _forward_terms(text):
                by_posting[term, part].append(doc)
                df[term] += 1
        for (term, part), gone in by_posting.items():
            postings.drop(self._db, term, part, gone)
        self._db.executemany("UPDATE lex_terms SET df = df - ? WHERE term = ?",
                             ((n, term) for term, n in df.items()))
        self._db.execute("DELETE FROM lex_terms WHERE df <= 0")
        self._db.executemany("DELETE FROM lex_docs WHERE key = ?", ((row[0],) for row in stored))
        self._db.execute("UPDATE lex_stats SET docs = docs - ?, length = length - ?",
                         (len(stored), sum(row[3] for row in stored)))

    def clear(self) -> None:
        for table in ("lex_parts", "lex_docs", "lex_terms", "lex_postings"):
            self._db.execute(f"DELETE FROM {table}")
        self._db.execute("UPDATE lex_stats SET docs = 0, length = 0")

    def search(
        self,
        query: str,
        *,
        groups: Collection[str] | None = None,
        kinds: Collection[str] | None = None,
        limit: int = 10,
    ) -> list[tuple[str, float]]:
        """The best ``limit`` keys with scores in (0, 1], best first (ties by key). Scores are
        normalised against the best score any document could reach for the query."""
        n, total_length = self._db.execute("SELECT docs, length FROM lex_stats").fetchone()
        if limit <= 0 or not n:
            return []
        query_terms = list(dict.fromkeys(terms(query)))[:MAX_QUERY_TERMS]
        parts = self._parts(groups, kinds)
        if not query_terms or (parts is not None and not parts):
            return []
        flat = K1 * (1 - B)
        per_length = K1 * B / (total_length / n or 1.0)
        variants = [[(variant, idf(n, df) * weight * (K1 + 1))
                     for variant, df, weight in self._vocabulary.variants(term, n)]
                    for term in query_terms]
        scores = (self._dense_top(variants, parts, flat, per_length, limit) if self._use_dense()
                  else self._pruned_top(variants, parts, flat, per_length, limit))
        if not scores:
            return []
        best_possible = sum(_reference(term, found, n) for term, found in zip(
            query_terms, variants, strict=True))
        ranked = sorted(scores.values(), reverse=True)
        floor = ranked[min(limit, len(ranked)) - 1]
        best = {doc: value for doc, value in scores.items() if value >= floor}
        keys = self._keys(best)
        top = sorted(((keys[doc], value) for doc, value in best.items()),
                     key=lambda kv: (-kv[1], kv[0]))[:limit]
        return [(key, min(1.0, value / best_possible)) for key, value in top]

    def _forward(self, docs: Sequence[int]) -> list[tuple[int, int, str]]:
        found: list[tuple[int, int, str]] = []
        for start in range(0, len(docs), 500):
            part = docs[start : start + 500]
            marks = ",".join("?" * len(part))
            found += self._db.execute(
                f"SELECT doc, length, terms FROM lex_docs WHERE doc IN ({marks})", part)
        return found

    # -- partitions, keys, vocabulary -------------------------------------------------------

    def _parts_by_name(self) -> dict[tuple[str, str], int]:
        return {(grp, kind): part for part, grp, kind in
                self._db.execute("SELECT part, grp, kind FROM lex_parts")}

    def _new_part(self, document: Document) -> int:
        cursor = self._db.execute("INSERT INTO lex_parts (grp, kind) VALUES (?, ?)",
                                  (document.group, document.kind))
        return int(cursor.lastrowid or 0)

    def _parts(
        self, groups: Collection[str] | None, kinds: Collection[str] | None
    ) -> set[int] | None:
        """The partitions a filter admits; None when there is no filter."""
        if groups is None and kinds is None:
            return None
        return {part for (grp, kind), part in self._parts_by_name().items()
                if (groups is None or grp in groups) and (kinds is None or kind in kinds)}

    def _keys(self, docs: Collection[int]) -> dict[int, str]:
        found: dict[int, str] = {}
        listed = list(docs)
        for start in range(0, len(listed), 500):
            part = listed[start : start + 500]
            marks = ",".join("?" * len(part))
            found.update(self._db.execute(
                f"SELECT doc, key FROM lex_docs WHERE doc IN ({marks})", part).fetchall())
        return found

    # -- scoring ----------------------------------------------------------------------------

    def _use_dense(self) -> bool:
        """Whether to score with numpy (``backends.search.dense``): where it is loaded already, or
        from this index's ``DENSE_AFTER``-th search on, if it can be imported. A one-shot
        search or hook is spared the import (~60 ms); a server soon pays it once."""
        if self._dense is None:
            self._searches += 1
            if "numpy" in sys.modules or self._searches > DENSE_AFTER:
                self._dense = importlib.util.find_spec("numpy") is not None
        return bool(self._dense)

    def _dense_top(self, variants: list[list[tuple[str, float]]], parts: set[int] | None,
                   flat: float, per_length: float, limit: int) -> dict[int, float]:
        from backends.search import dense  # numpy: only once _use_dense says so

        sql = "SELECT docs, tfs, lens FROM lex_postings WHERE term = ?"
        (documents,) = self._db.execute("SELECT next_doc FROM lex_stats").fetchone()
        return dense.top([found for found in variants if found],
                         lambda term: self._db.execute(*in_parts(sql, term, parts)),
                         documents=int(documents), flat=flat, per_length=per_length, limit=limit)

    def _pruned_top(self, variants: list[list[tuple[str, float]]], parts: set[int] | None,
                    flat: float, per_length: float, limit: int) -> dict[int, float]:
        impacts: dict[bytes, float] = {}
        plans = [self._plan(found, parts, (flat, per_length), impacts) for found in variants]
        reader = topk.Reader(lambda term: postings.read(self._db, term, parts), self._forward)
        return topk.top(plans, reader, flat=flat, per_length=per_length, limit=limit)

    def _plan(self, variants: list[tuple[str, float]], parts: set[int] | None,
              norms: tuple[float, float], impacts: dict[bytes, float]) -> topk.Plan:
        blocks = [block for variant, gain in variants
                  for block in postings.blocks(self._db, variant, gain, parts, norms, impacts)]
        return topk.Plan(variants=variants, blocks=sorted(blocks, key=lambda block: -block.bound))
