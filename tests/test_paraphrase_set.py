"""The paraphrase set holds to its rule: each question rewords its memory with at most one
content word in common, so that finding it takes meaning, not words."""

from __future__ import annotations

from pathlib import Path

from bench import paraphrase


def test_every_question_shares_at_most_one_content_word_with_its_memory() -> None:
    pairs = paraphrase.load()
    assert len(pairs) >= 60
    assert len({pair.id for pair in pairs}) == len(pairs)
    too_close = {pair.id: sorted(pair.shared()) for pair in pairs
                 if len(pair.shared()) > paraphrase.MAX_SHARED}
    assert too_close == {}


def test_the_checker_sees_shared_words_through_case_and_word_forms(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text('{"id": "x", "memory": "Locks the Database file", '
                    '"query": "locking databases, once"}\n')
    (pair,) = paraphrase.load(path)
    assert pair.shared() == {"lock", "databas"}


def test_score_counts_the_one_memory_within_the_first_five() -> None:
    pairs = [paraphrase.Pair("a", "m", "q"), paraphrase.Pair("b", "m", "q")]
    found = paraphrase.score(pairs, {"a": ["z", "a"], "b": ["1", "2", "3", "4", "5", "b"]})
    assert found == paraphrase.Score(r5=0.5, mrr=(1 / 2 + 1 / 6) / 2)
