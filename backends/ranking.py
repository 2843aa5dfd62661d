"""Lexical ranking shared by every layer: BM25 over folded, lightly stemmed terms, with each
query term widened to vocabulary terms it prefixes or misspells (rapidfuzz).

Scores are normalised to [0, 1] against the best score any document could reach for the query
(every query term present and saturated), so a score means "how much of the query matched"
and thresholds mean the same thing in every layer and for every query.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import re
from collections import Counter
from collections.abc import Collection, Hashable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from backends.model import Episode

K1 = 1.2
B = 0.75
PREFIX_WEIGHT = 0.8
TYPO_WEIGHT = 0.7
MAX_QUERY_TERMS = 64  # bounds the work a pasted 10,000-character query can cause
MAX_WIDENED = 8
WIDEN_BELOW_DF = 50  # or 1% of the documents, whichever is more

_WORD = re.compile(r"[^\W_]+")
_STOPWORD_TEXT = """a about above after again against all am an and any are as at be because been
    before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve don doesn didn isn wasn aren weren won wouldn shouldn couldn"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix stripper: enough that "paint", "paints", "painted", "painting" meet."""
    if len(word) <= 3 or word.isdigit():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("ing") and len(word) > 5:
        word = _undouble(word[:-3])
    elif word.endswith("ed") and len(word) > 4:
        word = _undouble(word[:-2])
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _undouble(word: str) -> str:
    """running -> runn -> run; but falling -> fall, passed -> pass."""
    if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
        return word[:-1]
    return word


def search_text(episode: Episode) -> str:
    """What every layer's search reads of an episode, so equal memories rank alike anywhere."""
    return f"{episode.name}\n{episode.body}"


def terms(text: str) -> list[str]:
    """Case- and punctuation-folded, stemmed content words of ``text``."""
    return [stem(w) for w in _WORD.findall(text.casefold()) if w not in STOPWORDS]


Partition = tuple[str, str]
"""(group, kind): postings are split by it so a filtered search never visits other groups."""


@dataclass(frozen=True, slots=True)
class _TermPlan:
    variants: list[tuple[str, float]]  # (vocabulary term, its BM25 gain: weighted idf x (k1+1))
    bound: float  # the most this query term can add to any document's score
    reference: float  # what it adds to the best score a document could reach


class LexicalIndex:
    """An in-memory inverted index; cheap to rebuild from the stored episodes at open."""

    def __init__(self) -> None:
        # term -> (group, kind) -> key -> (term frequency, document length)
        self._postings: dict[str, dict[Partition, dict[Hashable, tuple[int, int]]]] = {}
        self._df: Counter[str] = Counter()
        self._docs: dict[Hashable, tuple[Partition, Counter[str]]] = {}
        self._vocabulary: list[str] = []  # sorted, for prefix look-ups
        self._vocabulary_dirty = False
        self._total_length = 0

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._docs

    def add(self, key: Hashable, text: str, *, group: str, kind: str) -> None:
        """Index ``text`` under ``key``, replacing what ``key`` held before."""
        self.remove(key)
        counts = Counter(terms(text))
        length = sum(counts.values())
        partition = (group, kind)
        postings = self._postings
        self._df.update(counts.keys())  # counted in C; this loop is most of an index build
        for term, tf in counts.items():
            partitions = postings.get(term)
            if partitions is None:
                postings[term] = {partition: {key: (tf, length)}}
                self._vocabulary_dirty = True
                continue
            bucket = partitions.get(partition)
            if bucket is None:
                partitions[partition] = {key: (tf, length)}
            else:
                bucket[key] = (tf, length)
        self._docs[key] = (partition, counts)
        self._total_length += length

    def remove(self, key: Hashable) -> None:
        entry = self._docs.pop(key, None)
        if entry is None:
            return
        partition, counts = entry
        self._total_length -= sum(counts.values())
        for term in counts:
            partitions = self._postings[term]
            postings = partitions[partition]
            del postings[key]
            if not postings:
                del partitions[partition]
            self._df[term] -= 1
            if not self._df[term]:
                del self._df[term], self._postings[term]
                self._vocabulary_dirty = True

    def search(
        self,
        query: str,
        *,
        groups: Collection[str] | None = None,
        kinds: Collection[str] | None = None,
        limit: int = 10,
    ) -> list[tuple[Hashable, float]]:
        """The best ``limit`` keys with scores in (0, 1], best first (ties by key)."""
        if limit <= 0 or not self._docs:
            return []
        query_terms = list(dict.fromkeys(terms(query)))[:MAX_QUERY_TERMS]
        if not query_terms:
            return []
        n = len(self._docs)
        flat = K1 * (1 - B)
        per_length = K1 * B / (self._total_length / n or 1.0)
        plans = [self._plan(term, n) for term in query_terms]
        best_possible = sum(plan.reference for plan in plans)
        # Max-score pruning, exact for the top ``limit``: terms are taken rarest first, and once
        # the current limit-th score beats all that the remaining terms could add, a document
        # not yet scored can no longer enter the top, so common terms only update candidates.
        plans.sort(key=lambda plan: -plan.bound)
        remaining = sum(plan.bound for plan in plans)
        scores: dict[Hashable, float] = {}
        for plan in plans:
            closed = len(scores) >= limit and heapq.nlargest(limit, scores.values())[-1] > remaining
            remaining -= plan.bound
            per_doc: dict[Hashable, float] = {}
            for variant, gain in plan.variants:
                for (group, kind), postings in self._postings[variant].items():
                    if (groups is not None and group not in groups) or (
                        kinds is not None and kind not in kinds
                    ):
                        continue
                    if closed:
                        postings = {k: postings[k] for k in scores.keys() & postings.keys()}
                    for key, (tf, length) in postings.items():
                        value = gain * tf / (tf + flat + per_length * length)
                        if value > per_doc.get(key, 0.0):
                            per_doc[key] = value
            for key, value in per_doc.items():
                scores[key] = scores.get(key, 0.0) + value
        if not scores:
            return []
        floor = heapq.nlargest(limit, scores.values())[-1]
        top = sorted(
            ((key, value) for key, value in scores.items() if value >= floor),
            key=lambda kv: (-kv[1], str(kv[0])),
        )[:limit]
        return [(key, min(1.0, value / best_possible)) for key, value in top]

    def _plan(self, term: str, n: int) -> _TermPlan:
        variants = [
            (variant, _idf(n, self._df[variant]) * weight * (K1 + 1))
            for variant, weight in self._variants(term)
        ]
        exact = next((gain for variant, gain in variants if variant == term), None)
        return _TermPlan(
            variants=variants,
            bound=max((gain for _, gain in variants), default=0.0),
            reference=exact if exact is not None else _idf(n, 0) * (K1 + 1),
        )

    def _variants(self, term: str) -> Iterable[tuple[str, float]]:
        """The term itself and, for a term of four letters or more that is rare or unknown here,
        vocabulary terms it prefixes and close misspellings (one edit, two from eight letters).
        A common term needs no widening: it already matches plenty, and widening it would
        multiply the postings a search walks."""
        df = self._df.get(term, 0)
        if df:
            yield term, 1.0
        if len(term) < 4 or df > max(WIDEN_BELOW_DF, len(self._docs) // 100):
            return
        vocabulary = self._sorted_vocabulary()
        start = bisect.bisect_right(vocabulary, term)
        prefixed = itertools.takewhile(lambda c: c.startswith(term), vocabulary[start:])
        for candidate in itertools.islice(prefixed, MAX_WIDENED):
            yield candidate, PREFIX_WEIGHT
        if not df:
            max_edits = 1 if len(term) < 8 else 2
            for candidate, _distance, _ in process.extract(
                term, vocabulary, scorer=Levenshtein.distance, score_cutoff=max_edits,
                limit=MAX_WIDENED,
            ):
                if not candidate.startswith(term):
                    yield candidate, TYPO_WEIGHT

    def _sorted_vocabulary(self) -> list[str]:
        if self._vocabulary_dirty:
            self._vocabulary = sorted(self._postings)
            self._vocabulary_dirty = False
        return self._vocabulary


def _idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

