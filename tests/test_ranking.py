"""The shared lexical ranking: folding, widening, normalised scores, and exact pruning."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from backends.search.ranking import stem, terms
from backends.search.textindex import CHUNK, TextIndex

REPO = Path(__file__).resolve().parents[1]
WORDS = ["paint", "painting", "sunrise", "lake", "kuzu", "graph", "lock", "file", "agent", "test",
         "memory", "deadline", "budget", "token", "coach", "player", "gate", "review", "the", "a"]


def empty(chunk: int = CHUNK, *, dense: bool = False) -> TextIndex:
    """An index scoring with ``topk`` (pure Python), or with numpy (``backends.search.dense``)."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    TextIndex.create(db)
    return TextIndex(db, chunk=chunk, dense=dense)


def build(documents: dict[str, str], groups: int = 3, chunk: int = CHUNK, *,
          dense: bool = False) -> TextIndex:
    index = empty(chunk, dense=dense)
    for n, (key, text) in enumerate(sorted(documents.items())):
        index.add(key, text, group=f"g{n % groups}", kind="note")
    return index


def test_terms_fold_case_punctuation_stopwords_and_suffixes() -> None:
    assert terms("The PAINTINGS, painted; Painting!") == ["paint", "paint", "paint"]
    assert stem("running") == "run" and stem("stories") == "story"
    assert terms("") == [] and terms("!!! ... the of") == []


def test_typo_and_prefix_widening_find_the_memory() -> None:
    index = build({"a": "Kuzu database locked by another process", "b": "sunrise over the lake"})
    assert [key for key, _ in index.search("databse lockd")] == ["a"]  # one wrong letter each
    assert [key for key, _ in index.search("data")] == ["a"]  # a prefix of a stored word


def test_scores_mean_how_much_of_the_query_matched() -> None:
    index = build({"both": "graph lock", "one": "graph memory", "none": "sunrise lake"})
    hits = dict(index.search("graph lock"))
    assert set(hits) == {"both", "one"}
    assert 0.0 < hits["one"] < hits["both"] <= 1.0


def test_remove_and_replace_update_every_structure() -> None:
    index = build({"a": "graph lock", "b": "graph memory"})
    index.add("a", "sunrise lake", group="g0", kind="note")
    assert [key for key, _ in index.search("lock")] == []
    index.remove("b")
    index.remove("missing")
    assert len(index) == 1 and index.search("graph") == []


def test_filters_keep_other_groups_and_kinds_out() -> None:
    index = empty()
    index.add("x", "graph lock", group="alpha", kind="pattern")
    index.add("y", "graph lock", group="beta", kind="gotcha")
    assert [k for k, _ in index.search("graph", groups={"beta"})] == ["y"]
    assert [k for k, _ in index.search("graph", kinds={"pattern"})] == ["x"]
    assert index.search("graph", groups=set()) == []


@given(
    documents=st.dictionaries(
        st.text("abcdefghij", min_size=1, max_size=4),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join),
        min_size=1, max_size=40,
    ),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
    limit=st.integers(1, 8),
    chunk=st.sampled_from([1, 2, 5, CHUNK]),
    groups=st.sampled_from([None, {"g0"}, {"g1", "g2"}]),
)
def test_pruned_top_k_equals_the_exhaustive_ranking(
    documents: dict[str, str], query: str, limit: int, chunk: int, groups: set[str] | None
) -> None:
    # Small chunks: many blocks per term, so blocks are skipped by their bounds.
    index = build(documents, chunk=chunk)
    exhaustive = index.search(query, groups=groups, limit=len(documents))
    assert index.search(query, groups=groups, limit=limit) == exhaustive[:limit]
    assert all(0.0 < score <= 1.0 for _, score in exhaustive)
    assert [score for _, score in exhaustive] == sorted((s for _, s in exhaustive), reverse=True)


@given(
    documents=st.dictionaries(
        st.text("abcdefghij", min_size=1, max_size=4),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join),
        min_size=1, max_size=40,
    ),
    # Misspelt and cut words too: widened terms take the best of several variants.
    query=st.lists(st.sampled_from([*WORDS, "paintin", "memroy", "deadlin", "revie"]),
                   min_size=1, max_size=6).map(" ".join),
    limit=st.integers(1, 8),
    chunk=st.sampled_from([1, 2, 5, CHUNK]),
    groups=st.sampled_from([None, {"g0"}, {"g1", "g2"}]),
    removed=st.sets(st.text("abcdefghij", min_size=1, max_size=4), max_size=10),
)
def test_the_numpy_scorer_ranks_exactly_as_the_pure_python_one(
    documents: dict[str, str], query: str, limit: int, chunk: int, groups: set[str] | None,
    removed: set[str],
) -> None:
    indexes = [build(documents, chunk=chunk, dense=dense) for dense in (False, True)]
    for index in indexes:
        index.remove_many(removed)  # removals leave loose chunk bounds behind
    pure, dense = (index.search(query, groups=groups, limit=limit) for index in indexes)
    assert dense == pure  # keys, order and scores to the last bit


def test_an_index_loads_numpy_only_after_some_searches_unless_loaded() -> None:
    script = """
        import sqlite3, sys
        from backends.search.textindex import DENSE_AFTER, TextIndex
        db = sqlite3.connect(":memory:")
        TextIndex.create(db)
        index = TextIndex(db)
        index.add("k", "graph lock", group="g", kind="note")
        seen = []
        for _ in range(DENSE_AFTER + 1):
            index.search("graph")
            seen.append("numpy" in sys.modules)
        print(seen.index(True), DENSE_AFTER)
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, cwd=REPO, timeout=120, check=True)
    first, after = map(int, done.stdout.split())
    assert first == after


EDITS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "drop"]),
        st.text("abcdef", min_size=1, max_size=2),
        st.lists(st.sampled_from(WORDS), min_size=0, max_size=10).map(" ".join),
        st.integers(0, 2),
    ),
    max_size=60,
)


@given(edits=EDITS, query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join))
def test_an_index_changed_step_by_step_answers_as_one_built_at_once(
    edits: list[tuple[str, str, str, int]], query: str
) -> None:
    stepwise = empty()
    final: dict[str, tuple[str, int]] = {}
    for action, key, text, group in edits:
        if action == "put":
            stepwise.add(key, text, group=f"g{group}", kind="note")
            final[key] = (text, group)
        else:
            stepwise.remove(key)
            final.pop(key, None)
    rebuilt = empty()
    for key, (text, group) in final.items():
        rebuilt.add(key, text, group=f"g{group}", kind="note")
    assert len(stepwise) == len(rebuilt) == len(final)
    for groups in (None, {"g0"}, {"g1", "g2"}):
        assert stepwise.search(query, groups=groups, limit=50) == rebuilt.search(
            query, groups=groups, limit=50)


def test_postings_span_chunks_and_survive_removal_in_the_middle() -> None:
    index = empty()
    count = 2 * CHUNK + 7
    for n in range(count):
        index.add(f"k{n:05d}", "graph lock" if n % 2 else "graph", group="g", kind="note")
    for n in range(0, count, 3):
        index.remove(f"k{n:05d}")
    alive = [n for n in range(count) if n % 3]
    found = {key for key, _ in index.search("graph", limit=count)}
    assert found == {f"k{n:05d}" for n in alive}
    assert {key for key, _ in index.search("lock", limit=count)} == {
        f"k{n:05d}" for n in alive if n % 2}
