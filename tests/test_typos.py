"""Misspellings found inside SQLite (``backends.search.typos``) are exactly rapidfuzz's over the
whole vocabulary (``ranking.typo_candidates``), so a one-shot search answers as a server does."""

from __future__ import annotations

import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from backends.search.ranking import MAX_WIDENED, typo_candidates
from backends.search.textindex import TextIndex
from backends.search.typos import distance_within, typo_terms
from backends.search.widening import TYPO_SCANS

LETTERS = "abcdeé日"  # few letters, so that near terms abound; beyond ASCII, as folding allows


def _edited(term: str, edits: list[tuple[int, int, str]]) -> str:
    for op, at, letter in edits:
        at %= len(term) + 1
        if op == 0:
            term = term[:at] + letter + term[at + 1:]
        elif op == 1:
            term = term[:at] + term[at + 1:]
        else:
            term = term[:at] + letter + term[at:]
    return term


def _vocabulary(terms: set[str]) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    TextIndex.create(db)
    db.executemany("INSERT INTO lex_terms VALUES (?, 1)", [(term,) for term in terms])
    return db


edit = st.tuples(st.integers(0, 2), st.integers(0, 12), st.sampled_from(LETTERS))


@given(
    term=st.text(LETTERS, min_size=4, max_size=11),
    near=st.lists(st.lists(edit, min_size=1, max_size=3), max_size=30),
    far=st.sets(st.text(LETTERS, min_size=1, max_size=13), max_size=30),
)
def test_the_sql_filter_finds_what_rapidfuzz_finds(
    term: str, near: list[list[tuple[int, int, str]]], far: set[str]
) -> None:
    vocabulary = ({_edited(term, edits) for edits in near} | far) - {term, ""}
    db = _vocabulary(vocabulary)
    listed = [row[0] for row in db.execute("SELECT term FROM lex_terms")]
    assert listed == sorted(vocabulary)  # the order rapidfuzz's ties follow
    assert typo_terms(db, term) == typo_candidates(term, listed)


@given(a=st.text(LETTERS, max_size=9), b=st.text(LETTERS, max_size=9), limit=st.integers(0, 3))
def test_distance_within_is_damerau_up_to_the_limit(a: str, b: str, limit: int) -> None:
    from rapidfuzz.distance import OSA

    distance = OSA.distance(a, b)
    assert distance_within(a, b, limit) == (distance if distance <= limit else None)


@given(term=st.text(LETTERS, min_size=4, max_size=11), at=st.integers(0, 10),
       far=st.sets(st.text(LETTERS, min_size=1, max_size=13), max_size=20))
def test_two_adjacent_letters_swapped_are_one_edit_and_found(
    term: str, at: int, far: set[str]
) -> None:
    at %= len(term) - 1
    swapped = term[:at] + term[at + 1] + term[at] + term[at + 2:]
    if swapped == term:
        return
    assert distance_within(term, swapped, 1) == 1
    db = _vocabulary(({swapped} | far) - {term, ""})
    assert swapped in typo_terms(db, term) or len(
        [t for t in far if distance_within(term, t, 1) is not None]) >= MAX_WIDENED


def test_an_index_answers_alike_before_and_after_it_loads_its_vocabulary() -> None:
    db = sqlite3.connect(":memory:", isolation_level=None)
    TextIndex.create(db)
    index = TextIndex(db)
    for n, text in enumerate(["database locked by another process", "databases and locks",
                              "the lake at sunrise", "a locker in the database"]):
        index.add(f"k{n}", text, group="g", kind="note")
    answers = [index.search("databse lockd sunrize") for _ in range(TYPO_SCANS + 2)]
    assert answers[0] and all(answer == answers[0] for answer in answers)


def test_a_search_with_two_letters_swapped_finds_the_word() -> None:
    db = sqlite3.connect(":memory:", isolation_level=None)
    TextIndex.create(db)
    index = TextIndex(db)
    index.add("k0", "Stripe refunds are retried with an idempotency key", group="g", kind="note")
    index.add("k1", "the lake at sunrise", group="g", kind="note")
    for query in ("stirpe", "strpie", "tsripe"):
        assert [hit[0] for hit in index.search(query)] == ["k0"], query
