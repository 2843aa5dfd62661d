"""A query term's misspellings among an index's vocabulary, found inside SQLite: the same terms,
in the same order, as ``ranking.typo_candidates`` over the whole vocabulary, without loading
the vocabulary into Python nor importing rapidfuzz (together ~40 ms of a one-shot search).

An edit is a substitution, a deletion, an insertion or two adjacent letters swapped
("stirpe" for "stripe": a transposition is one edit, as in Damerau's optimal string alignment).
A term within ``k`` edits of ``term`` has a length within ``k`` of it and, cut ``term`` into
``2k + 1`` pieces, holds one of them unchanged: each edit touches two pieces at most (a swap
across a cut spoils both sides; an insertion touches the piece on its right, or the last one
at the end). An unchanged first piece is its prefix, an unchanged last piece its suffix, a
middle one moved by at most ``k`` places. SQLite applies that filter while it scans the terms;
the few that pass get the exact distance here.
"""

from __future__ import annotations

import sqlite3
from itertools import pairwise

from backends.search.ranking import MAX_WIDENED, max_edits


def pieces(term: str, parts: int) -> list[tuple[int, str]]:
    """``term`` cut into ``parts`` contiguous pieces of near-equal length, with their starts."""
    bounds = [len(term) * n // parts for n in range(parts + 1)]
    return [(start, term[start:end]) for start, end in pairwise(bounds)]


def _filter(term: str, edits: int) -> tuple[str, list[object]]:
    """The SQL condition a term within ``edits`` of ``term`` meets, with its parameters."""
    cut = pieces(term, 2 * edits + 1)
    (_, first), (_, last) = cut[0], cut[-1]
    conditions = ["substr(term, 1, ?) = ?", "substr(term, ?) = ?"]
    parameters: list[object] = [len(first), first, -len(last), last]
    for start, piece in cut[1:-1]:
        for at in range(max(0, start - edits), start + edits + 1):
            conditions.append("substr(term, ?, ?) = ?")
            parameters += [at + 1, len(piece), piece]
    where = f"length(term) BETWEEN ? AND ? AND ({' OR '.join(conditions)})"
    return where, [len(term) - edits, len(term) + edits, *parameters]


def distance_within(a: str, b: str, limit: int) -> int | None:
    """The optimal-string-alignment distance of ``a`` and ``b`` (Levenshtein's edits, and two
    adjacent letters swapped as one) when it is at most ``limit``, else None."""
    for edits in range(limit + 1):
        if _within(a, b, edits):
            return edits
    return None


def _within(a: str, b: str, edits: int) -> bool:
    # Equal first letters always pair up in some cheapest alignment; at the first difference,
    # one of a substitution, a deletion, an insertion or a swap of two letters is spent.
    same = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        same += 1
    a, b = a[same:], b[same:]
    if not a or not b:
        return len(a) + len(b) <= edits
    if not edits:
        return False
    swapped = len(a) > 1 and len(b) > 1 and a[0] == b[1] and a[1] == b[0]
    return ((swapped and _within(a[2:], b[2:], edits - 1))
            or _within(a[1:], b[1:], edits - 1) or _within(a[1:], b, edits - 1)
            or _within(a, b[1:], edits - 1))


def typo_terms(db: sqlite3.Connection, term: str) -> list[str]:
    """``ranking.typo_candidates(term, vocabulary)`` for the vocabulary of ``db``'s
    ``lex_terms`` table: the nearest ``MAX_WIDENED`` within reach (ties in the table's term
    order, which is code-point order), less those that merely extend ``term``."""
    edits = max_edits(term)
    where, parameters = _filter(term, edits)
    near = []
    for (candidate,) in db.execute(f"SELECT term FROM lex_terms WHERE {where}", parameters):
        distance = distance_within(term, candidate, edits)
        if distance is not None:
            near.append((distance, candidate))
    nearest = sorted(near)[:MAX_WIDENED]
    return [candidate for _, candidate in nearest if not candidate.startswith(term)]
