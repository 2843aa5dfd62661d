"""The relevance thresholds of context assembly (and of the prompt hook).

Thresholds are on the shared lexical scale (``backends.ranking``): a score is the share of the
query's best possible BM25 score that a memory reaches, so it is dominated by the query's rare
terms; a memory holding every query term once, at average length, scores 1 / (1 + k1) ≈ 0.45.
The defaults sit between the populations measured on ``bench.context_corpus`` on both layers:
memories relevant to a task score 0.169 or more, unrelated work 0.120 or less (docs/CONTEXT.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory.context.analysis import Analysis


@dataclass(frozen=True)
class Thresholds:
    """Minimum scores: ``familiar`` and ``first_of_type`` for a memory to be relevant to the
    task, ``similar_task`` for a past outcome to make the task familiar."""

    familiar: float = 0.14
    first_of_type: float = 0.125
    similar_task: float = 0.30

    def relevance(self, analysis: Analysis) -> float:
        return self.first_of_type if analysis.is_first_of_type else self.familiar
