"""How the words' ranking and the nearest vectors are fused when the vectors mean something."""

from __future__ import annotations

import pytest

from backends.graph import meaning
from backends.graph.embedder import HashingEmbedder


def test_a_memory_both_rankings_find_beats_one_only_one_finds_first() -> None:
    lexical = [("words", 1.0), ("both", 0.9)]
    nearest = [("meaning", 0.8), ("both", 0.7)]
    ranked = meaning.fuse(lexical, nearest, limit=10, k=10.0, weight=1.0)
    assert [key for key, _ in ranked] == ["both", "meaning", "words"]
    assert ranked[0][1] == 1.0 and all(0.0 < score <= 1.0 for _, score in ranked)


def test_the_weight_leans_the_fusion_toward_one_ranking() -> None:
    lexical, nearest = [("words", 1.0)], [("meaning", 0.9)]
    assert meaning.fuse(lexical, nearest, limit=1, weight=2.0)[0][0] == "meaning"
    assert meaning.fuse(lexical, nearest, limit=1, weight=0.5)[0][0] == "words"
    assert meaning.fuse([], [], limit=5) == []


def test_only_an_embedder_that_says_so_is_ranked_by_meaning() -> None:
    assert not meaning.semantic(HashingEmbedder())


def test_meaning_weighs_more_when_the_words_match_weakly() -> None:
    weak, strong = [("words", meaning.WEAK_WORDS / 2)], [("words", 0.5)]
    assert meaning.meaning_weight(weak) == meaning.WEAK_WORDS_WEIGHT > meaning.MEANING_WEIGHT
    assert meaning.meaning_weight(strong) == meaning.MEANING_WEIGHT
    assert meaning.meaning_weight([]) == meaning.WEAK_WORDS_WEIGHT  # no word matched at all
    nearest = [("meaning", 0.6)]
    assert meaning.fuse(weak, nearest, limit=1, weight=meaning.meaning_weight(weak))[0][0] == (
        "meaning")
    assert meaning.fuse(strong, nearest, limit=1,
                        weight=meaning.meaning_weight(strong))[0][0] == "words"


def test_fused_scores_stay_on_the_words_scale() -> None:
    """What the graph's links add to a score (``expansion.fuse``) is weighed against the words'
    scores: fusion must not lift every memory it ranks to the top of that scale."""
    lexical = [("words", 0.3), ("more words", 0.2)]
    ranked = meaning.fuse(lexical, [("meaning", 0.7), ("words", 0.6)], limit=10)
    assert ranked[0][0] == "words" and ranked[0][1] == pytest.approx(0.3)
    assert all(score <= 0.3 + 1e-9 for _, score in ranked)
    only_meaning = meaning.fuse([], [("meaning", 0.4), ("near", 0.35)], limit=10)
    assert only_meaning[0][0] == "meaning" and only_meaning[0][1] == pytest.approx(0.4)
