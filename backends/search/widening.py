"""What a query term matches in the lexical index's vocabulary (``lex_terms``, a B-tree of terms
with document frequencies): the term itself and, for a rare or unknown term, the terms it
prefixes (a range read) and close misspellings (``typos`` inside SQLite for the first few
look-ups, then ``ranking.typo_candidates`` over the vocabulary loaded once per change)."""

from __future__ import annotations

import sqlite3

from backends.search import typos
from backends.search.ranking import (
    MAX_WIDENED,
    PREFIX_WEIGHT,
    TYPO_WEIGHT,
    WIDEN_BELOW_DF,
    typo_candidates,
)

TYPO_SCANS = 8
"""typo look-ups an index answers inside SQLite before it loads its vocabulary for rapidfuzz:
a one-shot search or hook makes a few and is spared the load and the import (~40 ms at 10k
memories); a server makes many, and rapidfuzz over the loaded vocabulary is faster at scale"""
_LAST = "\U0010ffff"  # sorts after every term: the upper end of a prefix range


class Vocabulary:
    """The ``lex_terms`` table of one SQLite database, as a query term's widening reads it."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._loaded: tuple[tuple[int, int], list[str]] | None = None
        self._typo_scans = 0

    def df(self, term: str) -> int:
        row = self._db.execute("SELECT df FROM lex_terms WHERE term = ?", (term,)).fetchone()
        return 0 if row is None else int(row[0])

    def variants(self, term: str, n: int) -> list[tuple[str, int, float]]:
        """The term itself and, for a term of four letters or more that is rare or unknown here,
        vocabulary terms it prefixes and close misspellings (one edit, two from eight letters),
        each with its document frequency and weight. A common term needs no widening: it
        already matches plenty, and widening it would multiply the postings a search walks."""
        df = self.df(term)
        found = [(term, df, 1.0)] if df else []
        if len(term) < 4 or df > max(WIDEN_BELOW_DF, n // 100):
            return found
        prefixed = self._db.execute(
            "SELECT term, df FROM lex_terms WHERE term > ? AND term < ? ORDER BY term LIMIT ?",
            (term, term + _LAST, MAX_WIDENED))
        found += [(candidate, count, PREFIX_WEIGHT) for candidate, count in prefixed]
        if not df:
            for candidate in self._typos(term):
                found.append((candidate, self.df(candidate), TYPO_WEIGHT))
        return found

    def _typos(self, term: str) -> list[str]:
        """``typo_candidates`` of ``term``; the same terms either way (tests/test_typos.py)."""
        if self._loaded is None and self._typo_scans < TYPO_SCANS:
            self._typo_scans += 1
            return typos.typo_terms(self._db, term)
        return typo_candidates(term, self._terms())

    def _terms(self) -> list[str]:
        """Every term, loaded once per change of the index (typo widening needs them all)."""
        next_doc, docs = self._db.execute("SELECT next_doc, docs FROM lex_stats").fetchone()
        version = (int(next_doc), int(docs))
        if self._loaded is None or self._loaded[0] != version:
            listed = [row[0] for row in self._db.execute("SELECT term FROM lex_terms")]
            self._loaded = (version, listed)
        return self._loaded[1]
