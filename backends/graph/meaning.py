"""Search by meaning: when the embedder's vectors mean something (a sentence-embedding model,
``local_model``), the memories nearest the question join the words' ranking by weighted
reciprocal rank fusion, rather than only filling the list below the words' matches as the
built-in hashing vectors do. Meaning weighs more when the words match weakly (a question that
rewords its memory shares few words with it).

The values were chosen by cross-validation (``python -m bench.semantic``): RRF_K and
MEANING_WEIGHT on LoCoMo dev (tuned on three conversations for R@10 + MRR, scored on the other
two, all ten splits: k=5 w=0.5 in nine); WEAK_WORDS and WEAK_WORDS_WEIGHT among those that
leave LoCoMo's tuning conversations as they were, by the paraphrase set's halves. Measured with
all-MiniLM-L6-v2 (int8), LoCoMo held out R@10 0.741 / MRR 0.530 / multi-hop 0.441 against the
words alone 0.727 / 0.528 / 0.421; the paraphrase set R@5 0.909 against 0.167; the coding
benchmark (through the graph, whose links add to the fused scores before the cut) R@10 0.850
against 0.740. The nearest are read by each memory's context vector (``in_context``: a
memory written in a sequence with what was said around it).
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
RRF_K = 5.0
"""a rank's share is 1 / (RRF_K + rank): larger flattens the head of each ranking"""
MEANING_WEIGHT = 0.5
"""the vectors' ranking's share beside the words' (1.0)"""
WEAK_WORDS = 0.1
"""the words' best score (``EpisodeIndex.search``: a share of the best any memory could
reach) below which they match weakly: LoCoMo's questions score 0.16 or more nine times in ten,
the paraphrase set's 0.1 or less three times in four"""
WEAK_WORDS_WEIGHT = 3.0
"""the vectors' share when the words match weakly"""


def semantic(embedder: AnyEmbedder) -> bool:
    """Whether ``embedder``'s vectors are worth ranking by on their own."""
    return bool(getattr(embedder, "semantic", False))


def meaning_weight(lexical: Sequence[tuple[str, float]]) -> float:
    """The vectors' share beside ``lexical``: more when its best match is weak."""
    best = lexical[0][1] if lexical else 0.0
    return WEAK_WORDS_WEIGHT if best < WEAK_WORDS else MEANING_WEIGHT


def fuse(lexical: Sequence[tuple[str, float]], nearest: Sequence[tuple[str, float]], *,
         limit: int, k: float = RRF_K, weight: float = MEANING_WEIGHT) -> Ranked:
    """The best ``limit`` of both rankings by weighted reciprocal rank, ties by key; scores on
    the words' scale, the best at the words' best score (the nearest's similarity when no word
    matched), so that what the graph's links add (``expansion.fuse``) weighs as beside the
    words alone."""
    scores: dict[str, float] = {}
    for share, ranked in ((1.0, lexical), (weight, nearest)):
        for rank, (key, _) in enumerate(ranked[:CANDIDATES]):
            scores[key] = scores.get(key, 0.0) + share / (k + rank)
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    best = ranked[0][1] if ranked else 1.0
    top = min(1.0, max((lexical or nearest or [("", 1.0)])[0][1], 1e-6))
    return [(key, top * score / best) for key, score in ranked]


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
                               floor=-1.0, in_context=True)
    return fuse(lexical, nearest, limit=limit, weight=meaning_weight(lexical))
