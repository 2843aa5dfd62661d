"""Lexical ranking shared by every layer: BM25 over folded, lightly stemmed terms, with each
query term widened to vocabulary terms it prefixes or misspells (rapidfuzz).

Scores are normalised to [0, 1] against the best score any document could reach for the query
(every query term present and saturated), so a score means "how much of the query matched"
and thresholds mean the same thing in every layer and for every query.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Collection, Hashable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

K1 = 1.2
B = 0.75
PREFIX_WEIGHT = 0.8
TYPO_WEIGHT = 0.7
MAX_QUERY_TERMS = 64  # bounds the work a pasted 10,000-character query can cause
MAX_WIDENED = 8

_WORD = re.compile(r"[^\W_]+")
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve don doesn didn isn wasn aren weren won wouldn shouldn couldn""".split()
)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix stripper: enough that "paint", "paints", "painted", "painting" meet."""
    if len(word) <= 3 or word.isdigit():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("ing") and len(word) > 5:
        word = word[:-3]
        if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
            word = word[:-1]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
        if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
            word = word[:-1]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def terms(text: str) -> list[str]:
    """Case- and punctuation-folded, stemmed content words of ``text``."""
    return [stem(w) for w in _WORD.findall(text.casefold()) if w not in STOPWORDS]


@dataclass(frozen=True, slots=True)
class _Doc:
    length: int
    group: str
    kind: str


class LexicalIndex:
    """An in-memory inverted index; cheap to rebuild from the stored episodes at open."""

    def __init__(self) -> None:
        self._postings: dict[str, dict[Hashable, int]] = {}
        self._docs: dict[Hashable, _Doc] = {}
        self._doc_terms: dict[Hashable, Counter[str]] = {}
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
        for term, tf in counts.items():
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = {}
                self._vocabulary_dirty = True
            postings[key] = tf
        length = sum(counts.values())
        self._docs[key] = _Doc(length, group, kind)
        self._doc_terms[key] = counts
        self._total_length += length

    def remove(self, key: Hashable) -> None:
        doc = self._docs.pop(key, None)
        if doc is None:
            return
        self._total_length -= doc.length
        for term in self._doc_terms.pop(key):
            postings = self._postings[term]
            del postings[key]
            if not postings:
                del self._postings[term]
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
        avg_length = self._total_length / n or 1.0
        norm = K1 * (1 - B) / 1.0, K1 * B / avg_length
        scores: dict[Hashable, float] = {}
        best_possible = 0.0
        for term in query_terms:
            per_doc: dict[Hashable, float] = {}
            reference = _idf(n, 0)
            for variant, weight in self._variants(term):
                postings = self._postings[variant]
                idf = _idf(n, len(postings)) * weight
                if weight == 1.0:
                    reference = idf
                for key, tf in postings.items():
                    doc = self._docs[key]
                    if (groups is not None and doc.group not in groups) or (
                        kinds is not None and doc.kind not in kinds
                    ):
                        continue
                    value = idf * tf * (K1 + 1) / (tf + norm[0] + norm[1] * doc.length)
                    if value > per_doc.get(key, 0.0):
                        per_doc[key] = value
            best_possible += reference * (K1 + 1)
            for key, value in per_doc.items():
                scores[key] = scores.get(key, 0.0) + value
        if not scores:
            return []
        top = sorted(scores.items(), key=lambda kv: (-kv[1], str(kv[0])))[:limit]
        return [(key, min(1.0, value / best_possible)) for key, value in top]

    def _variants(self, term: str) -> Iterable[tuple[str, float]]:
        """The term itself, vocabulary terms it is a prefix of, and, for an unknown term of
        four letters or more, close misspellings (one edit, two from eight letters)."""
        if term in self._postings:
            yield term, 1.0
        if len(term) < 4:
            return
        vocabulary = self._sorted_vocabulary()
        start = bisect.bisect_right(vocabulary, term)
        widened = 0
        for candidate in vocabulary[start : start + 64]:
            if not candidate.startswith(term) or widened >= MAX_WIDENED:
                break
            widened += 1
            yield candidate, PREFIX_WEIGHT
        if term not in self._postings:
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
