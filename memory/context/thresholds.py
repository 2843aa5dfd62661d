"""The relevance settings of context assembly (and of the prompt hook).

Scores are on the shared lexical scale (``backends.search.ranking``): the share of the query's best
possible BM25 score that a memory reaches, dominated by the query's rare terms. On real project
memory relevant and unrelated memories do not separate at one absolute score, so context
selection cuts relative to the best candidates (``memory.context.selection``); the values below
were chosen on the labelled benchmark ``bench.context_recall`` (docs/CONTEXT.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from memory.context.analysis import Analysis


# A NamedTuple, not a dataclass: the dataclasses module imports inspect (with ast, dis and
# tokenize), a tenth of the prompt hook, which reads these.
class Thresholds(NamedTuple):
    """``familiar`` / ``first_of_type``: the score at which a past outcome counts toward the
    task's history (and the prompt hook's bar); ``similar_task``: the score at which it makes
    the task familiar. Selection: a hit scoring ``floor`` or less is no match; a memory is kept
    at ``relative`` of the best of its kind in its category and a share of the best in any
    category: ``in_spec`` for a memory of a spec with at least ``spec_share`` of the best
    candidates' relevance, ``lead`` for the best of its kind in its category when subject and
    links agree, ``overall`` for the rest, at least ``far`` for one far from the task's
    entities (``selection.floor``); ``known`` weighs the "known" query against the subject's,
    ``concern`` raises a memory by the share of the concern's terms it holds, and a pattern or
    gotcha holding ``convention`` of them is kept as a convention (a testing task's gotcha
    holding ``trap`` of them); at most ``per_file`` memories about one file; the specs of the
    ``spec_top`` best candidates are the task's. A memory tied to the working set (1 for
    one naming a working file, 0.5 for a convention of its area) gains ``work`` times its tie,
    and is kept whatever the floors when the tie is at least ``tie``; given a working set, a
    memory not tied to it that names files, none of them a working file, needs ``elsewhere`` of
    the best (at 2, the value cross-validation chose: none is kept)."""

    familiar: float = 0.14
    first_of_type: float = 0.125
    similar_task: float = 0.30
    relative: float = 0.1
    overall: float = 0.26
    floor: float = 0.05
    known: float = 0.4
    concern: float = 0.3
    per_file: int = 3
    spec_top: int = 5
    in_spec: float = 0.05
    lead: float = 0.1
    far: float = 0.4
    convention: float = 0.4
    trap: float = 0.2
    spec_share: float = 0.25
    work: float = 0.1
    tie: float = 0.7
    elsewhere: float = 2.0

    def relevance(self, analysis: Analysis) -> float:
        return self.first_of_type if analysis.is_first_of_type else self.familiar
