"""Plain BM25 (k1=1.2, b=0.75, lowercase ``\\w+`` tokens, nothing else): the baseline every
search figure is compared with, measured in the same run."""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Iterable

K1 = 1.2
B = 0.75
_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class BM25:
    """One corpus, held in memory: ``BM25((key, text), ...).search(query, limit)``."""

    def __init__(self, documents: Iterable[tuple[str, str]]) -> None:
        self._postings: dict[str, dict[str, int]] = {}
        self._lengths: dict[str, int] = {}
        for key, text in documents:
            counts = Counter(tokens(text))
            self._lengths[key] = sum(counts.values())
            for term, tf in counts.items():
                self._postings.setdefault(term, {})[key] = tf
        self._average = sum(self._lengths.values()) / max(len(self._lengths), 1) or 1.0

    def search(self, query: str, limit: int = 10) -> list[tuple[str, float]]:
        n = len(self._lengths)
        scores: dict[str, float] = {}
        for term in set(tokens(query)):
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = math.log(1 + (n - len(postings) + 0.5) / (len(postings) + 0.5))
            for key, tf in postings.items():
                norm = K1 * (1 - B + B * self._lengths[key] / self._average)
                scores[key] = scores.get(key, 0.0) + idf * tf * (K1 + 1) / (tf + norm)
        return heapq.nsmallest(limit, scores.items(), key=lambda kv: (-kv[1], kv[0]))
