"""How the words' ranking and the nearest vectors are fused when the vectors mean something."""

from __future__ import annotations

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
