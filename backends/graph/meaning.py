"""Search by meaning: when the embedder's vectors mean something (a sentence-embedding model,
``local_model``), the memories nearest the question join the words' ranking by weighted
reciprocal rank fusion, rather than only filling the list below the words' matches as the
built-in hashing vectors do.

The fusion's values are among those cross-validation chose on LoCoMo dev (tuned on three
conversations, scored on the other two, all ten splits: k=5 w=0.5, k=10 w=0.5, k=10 w=0.75,
k=30 w=0.5; ``python -m bench.semantic``), the one leaning most to meaning. Measured with
all-MiniLM-L6-v2 (int8): LoCoMo held out R@10 0.737 / MRR 0.512 / multi-hop 0.440 against the
words alone 0.727 / 0.528 / 0.421; the paraphrase set R@5 0.758 against 0.167 (a heavier
weight, k=5 w=0.75, reaches 0.848 there, untested on LoCoMo).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence

import numpy as np

from backends.errors import ProviderFailed
from backends.graph.embedder import AnyEmbedder, embed
from backends.graph.index import EpisodeIndex

log = logging.getLogger(__name__)

Ranked = list[tuple[str, float]]
CANDIDATES = 60
"""how far down each ranking is read"""
RRF_K = 10.0
"""a rank's share is 1 / (RRF_K + rank): larger flattens the head of each ranking"""
MEANING_WEIGHT = 0.75
"""the vectors' ranking's share beside the words' (1.0)"""


def semantic(embedder: AnyEmbedder) -> bool:
    """Whether ``embedder``'s vectors are worth ranking by on their own."""
    return bool(getattr(embedder, "semantic", False))


def fuse(lexical: Sequence[tuple[str, float]], nearest: Sequence[tuple[str, float]], *,
         limit: int, k: float = RRF_K, weight: float = MEANING_WEIGHT) -> Ranked:
    """The best ``limit`` of both rankings by weighted reciprocal rank, scores as a share of
    the best (so in (0, 1], as every layer's are), ties by key."""
    scores: dict[str, float] = {}
    for share, ranked in ((1.0, lexical), (weight, nearest)):
        for rank, (key, _) in enumerate(ranked[:CANDIDATES]):
            scores[key] = scores.get(key, 0.0) + share / (k + rank)
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    best = ranked[0][1] if ranked else 1.0
    return [(key, score / best) for key, score in ranked]


async def search(index: EpisodeIndex, embedder: AnyEmbedder, query: str, *,
                 groups: Collection[str] | None, kinds: Collection[str] | None,
                 limit: int) -> Ranked:
    """The words' ranking fused with the nearest vectors; the words alone when the embedder
    fails (a remote one down, a local one missing its files)."""
    lexical = index.search(query, groups=groups, kinds=kinds, limit=max(limit, CANDIDATES))
    try:
        vector = (await embed(embedder, [query]))[0]
    except ProviderFailed as exc:
        log.warning("searching without vectors: %s", exc)
        return lexical[:limit]
    if not np.any(vector):
        return lexical[:limit]
    nearest = index.neighbours([], vector, groups=groups, kinds=kinds, limit=CANDIDATES,
                               floor=-1.0)
    return fuse(lexical, nearest, limit=limit)
