"""Memories in context: memories written one after another in one session (the turns of an
imported conversation, what an agent noted as it worked) are each found also by what was said
around them. A memory's context vector is its own plus ``SHARE`` times those of the memories
within ``REACH`` of it in its sequence, normalised; search by meaning ranks by the query's
cosine with it. That cosine comes from the query's cosines with the stored vectors (one
product, as before) and what is kept per memory (its neighbours and its context vector's
length), so no second vector is stored and a later write changes its neighbours' context at
once.

A sequence is defined by what a memory records, nothing else: the memories of one group, kind
and source, ordered by when they were written (``created_at``; at the same instant by id, its
numbers read as numbers, so ``turn 2`` comes before ``turn 10``), cut where more than ``GAP``
passes between two of them. A neighbour joins a memory's context only when their own vectors
are at least ``KIN`` alike, so unrelated notes written in one batch stay as they are.

Values chosen on LoCoMo dev by cross-validation (``python -m bench.locomo_context``: tuned on
three conversations, scored on the other two, all ten splits) among those that leave the
paraphrase set's R@5 as it was (66 unrelated notes written at one instant by one writer: with
every neighbour let in, R@5 fell from 0.909 to 0.758). Held out, with all-MiniLM-L6-v2 int8:
R@10 0.748 / MRR 0.536 / multi-hop 0.442 against 0.741 / 0.530 / 0.441 without context and
0.727 / 0.528 / 0.421 for the words alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from backends.model import Episode

SHARE = 0.25
"""a neighbour's share of a memory's context vector"""
REACH = 2
"""how many memories either side are its context"""
GAP = timedelta(hours=1)
"""a pause that ends a sequence"""
KIN = 0.3
"""the cosine a neighbour needs with the memory to be its context"""

_NUMBER = re.compile(r"\d+")
Array = npt.NDArray[np.float32]


class Written(NamedTuple):
    """What places a memory in its sequence."""

    group: str
    kind: str
    source: str
    at: datetime
    key: str

    @classmethod
    def of(cls, episode: Episode) -> Written:
        return cls(episode.group_id, episode.kind, episode.source, episode.created_at,
                   episode.id)

    def order(self) -> tuple[datetime, list[int], str]:
        return self.at, [int(n) for n in _NUMBER.findall(self.key)], self.key


def sequences(written: Sequence[Written], gap: timedelta = GAP) -> list[list[int]]:
    """The positions in ``written`` of each sequence, in the order they were written."""
    runs: dict[tuple[str, str, str], list[int]] = {}
    for n, memory in enumerate(written):
        runs.setdefault((memory.group, memory.kind, memory.source), []).append(n)
    found = []
    for members in runs.values():
        members.sort(key=lambda n: written[n].order())
        run = [members[0]]
        for n in members[1:]:
            if written[n].at - written[run[-1]].at > gap:
                found.append(run)
                run = []
            run.append(n)
        found.append(run)
    return found


@dataclass(frozen=True)
class Context:
    """Which rows are each row's context (``into`` takes a share of ``of``) and the length of
    each row's context vector."""

    into: npt.NDArray[np.intp]
    of: npt.NDArray[np.intp]
    lengths: Array
    share: float

    @classmethod
    def build(cls, rows: Sequence[int], written: Sequence[Written], vectors: Array, *,
              share: float = SHARE, reach: int = REACH, kin: float = KIN, gap: timedelta = GAP
              ) -> Context:
        """The context of the memories ``written`` at ``rows`` of ``vectors`` (unit or zero)."""
        runs = sequences(written, gap) if share > 0 and reach > 0 else []
        order = [rows[n] for run in runs for n in run]
        runs_of = np.repeat(np.arange(len(runs)), [len(run) for run in runs])
        at = np.asarray(order, dtype=np.intp)
        blended = vectors.astype(np.float32, copy=True)
        into: list[npt.NDArray[np.intp]] = [np.zeros(0, np.intp)]
        of: list[npt.NDArray[np.intp]] = [np.zeros(0, np.intp)]
        for step in range(1, reach + 1):  # each pair within reach of one run, both ways
            same = runs_of[:-step] == runs_of[step:]
            for one, other in ((at[:-step][same], at[step:][same]),
                               (at[step:][same], at[:-step][same])):
                kindred = np.einsum("ij,ij->i", vectors[one], vectors[other]) >= kin
                one, other = one[kindred], other[kindred]
                blended[one] += share * vectors[other]  # each row once per part: no add.at
                into.append(one)
                of.append(other)
        lengths = np.linalg.norm(blended, axis=1).astype(np.float32)
        lengths[lengths == 0] = 1.0
        return cls(np.concatenate(into), np.concatenate(of), lengths, share)

    def cosines(self, similarity: Array) -> Array:
        """The query's cosine with each row's context vector, from its cosine with each row."""
        out = similarity.astype(np.float32, copy=True)
        np.add.at(out, self.into, self.share * similarity[self.of])
        out /= self.lengths[: len(out)]
        return out
