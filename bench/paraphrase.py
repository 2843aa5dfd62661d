"""Search by meaning: each question rewords one stored coding memory and shares at most one
content word with it (``backends.search.ranking.terms``: folded, stemmed, stopwords out), so a
search by words alone can hardly find it. The set (``data/paraphrase.jsonl``) was written and
labelled before anything was measured on it; ``tests/test_paraphrase_set.py`` holds it to that rule.

Every memory is stored in one group; each question asks for the top ``TOP`` and scores R@5
(its one memory among the first five) and MRR, lexical-only beside the semantic layer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from backends.model import Episode
from backends.search.ranking import terms

SET = Path(__file__).with_name("data") / "paraphrase.jsonl"
GROUP = "paraphrase"
TOP = 10
MAX_SHARED = 1
"""content words a question may share with its memory"""


@dataclass(frozen=True)
class Pair:
    id: str
    memory: str
    query: str

    def episode(self) -> Episode:
        return Episode(id=self.id, group_id=GROUP, kind="note", name=self.id, body=self.memory,
                       created_at=datetime(2026, 1, 1, tzinfo=UTC))

    def shared(self) -> set[str]:
        """The content words the question shares with what search reads of its memory."""
        return set(terms(f"{self.id}\n{self.memory}")) & set(terms(self.query))


def load(path: Path = SET) -> list[Pair]:
    return [Pair(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


@dataclass(frozen=True)
class Score:
    r5: float
    mrr: float


def score(pairs: list[Pair], rankings: dict[str, list[str]]) -> Score:
    """R@5 and MRR (within ``TOP``) of each question's one memory, averaged."""
    r5 = mrr = 0.0
    for pair in pairs:
        ranked = rankings.get(pair.id, [])[:TOP]
        if pair.id in ranked:
            rank = ranked.index(pair.id)
            r5 += rank < 5
            mrr += 1 / (rank + 1)
    return Score(r5 / len(pairs), mrr / len(pairs))
