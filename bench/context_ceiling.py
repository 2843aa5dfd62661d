"""The ceiling of context recall with the working set (issue 30): with the candidates the
selection sees, the best recall any single threshold could reach at <= 2 distractors per
context, chosen per set by an oracle (on the set itself: an upper bound, not a figure).

    python -m bench.context_ceiling

Each task of every later set is built with its working set as ``bench.context_workset``
builds it; the candidates the selection ranks (fused, in force, weighed by spec: what
``memory.context.selection.select`` cuts) are recorded with their relevance over the best.
Per set, three bounds:

- ``candidates``: every candidate kept (the recall no ranking rule can pass: a label that is
  no candidate needs a new key), with the distractors that brings;
- ``one cut``: a memory kept at a share of the best, the one share that does best on the set;
- ``cut + tie``: as the selection does it, a share of the best for untied memories and a tie
  that keeps a memory whatever its relevance, both chosen on the set;
- ``+ kind prior``: the same, a pattern's, gotcha's or decision's relevance raised by a
  factor also chosen on the set (conventions before outcomes and sessions).

The context's budget, the per-file cap and the rendering are left out (they only remove), so
the figures bound what a rule over these candidates can do.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import memory.context.assemble as assemble
from backends.kinds import ADR, GOTCHA, PATTERN
from backends.model import Episode
from bench.context_files import FILES
from bench.context_recall import Corpus, build_corpus
from bench.context_tasks import LabelledTask
from bench.context_worker import PROJECT
from bench.context_workset import SETS
from fallback import FileBackend
from memory.agent.validity import in_force
from memory.context import build_context
from memory.context.budget import Category
from memory.context.selection import Found, cohere, fuse, task_specs
from memory.context.thresholds import Thresholds

MAX_DISTRACTORS = 2.0
CONVENTIONS = frozenset({PATTERN, GOTCHA, ADR})
PRIORS = (1.0, 1.25, 1.5, 2.0, 3.0)
"""a convention's relevance raised by this factor (the kind prior)"""
TIES = (None, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""the tie that keeps a memory whatever its relevance (None: no such rule)"""


@dataclass(frozen=True)
class Seen:
    """One candidate of one task: its relevance over the best, its tie, what it is to the
    task (needed, a distractor, or neither: another memory of the task's areas)."""

    share: float
    tie: float
    needed: bool
    distractor: bool
    convention: bool
    """a pattern, gotcha or decision: how things are done here"""


Select = Callable[[Mapping[Category, Found], Mapping[Category, int], Thresholds, datetime],
                  dict[Category, list[Episode]]]


def _recorder(into: list[list[tuple[str, float, float, str]]]) -> Select:
    """``select``, recording the candidates it ranks before it cuts them."""
    original = assemble.select

    def select(found: Mapping[Category, Found], allocations: Mapping[Category, int],
               limits: Thresholds, at: datetime) -> dict[Category, list[Episode]]:
        fused = {c: [x for x in fuse(f, limits) if in_force(x.episode, at)]
                 for c, f in found.items()}
        specs = task_specs([x for xs in fused.values() for x in xs], limits.spec_top)
        ranked = [x for xs in fused.values() for x in cohere(xs, specs)]
        best = max((x.relevance for x in ranked), default=0.0) or 1.0
        kept: dict[str, tuple[str, float, float, str]] = {}
        for x in ranked:
            share = x.relevance / best if not x.convention else 1.0  # kept as conventions are
            if x.episode.id not in kept or kept[x.episode.id][1] < share:
                kept[x.episode.id] = (x.episode.id, share, x.tie, x.episode.kind)
        into.append(list(kept.values()))
        return original(found, allocations, limits, at)

    return select


async def candidates(store: FileBackend, tasks: Sequence[LabelledTask], corpus: Corpus
                     ) -> list[tuple[list[Seen], int]]:
    """Each task's candidates, and how many memories it needs."""
    recorded: list[list[tuple[str, float, float, str]]] = []
    original = assemble.select
    assemble.select = _recorder(recorded)
    try:
        found = []
        for task in tasks:
            built = task.build().model_copy(update={"files": FILES[task.name]})
            recorded.clear()
            await build_context(store, built, project_id=PROJECT, phase=task.phase,
                                thresholds=Thresholds(tie=0.6))
            needed = set(corpus.needed[task.name])
            seen = [Seen(share, tie, key in needed,
                         key not in needed and corpus.areas.get(key) not in task.areas,
                         kind in CONVENTIONS)
                    for key, share, tie, kind in (recorded[-1] if recorded else [])]
            found.append((seen, len(needed)))
        return found
    finally:
        assemble.select = original


def _at(found: Sequence[tuple[list[Seen], int]], cut: float, tie: float | None,
        prior: float = 1.0) -> tuple[float, float]:
    """Recall and distractors per context keeping a share ``cut`` of the best (a
    convention's share times ``prior``), or a tie."""
    got = need = stray = 0
    for seen, needed in found:
        kept = [s for s in seen if s.share * (prior if s.convention else 1.0) >= cut
                or (tie is not None and s.tie >= tie)]
        got += sum(s.needed for s in kept)
        need += needed
        stray += sum(s.distractor for s in kept)
    return got / need, stray / len(found)


def best(found: Sequence[tuple[list[Seen], int]], ties: Sequence[float | None],
         priors: Sequence[float] = (1.0,)) -> tuple[float, float, float, float | None, float]:
    """The best recall at <= ``MAX_DISTRACTORS`` (recall, distractors, cut, tie, prior)."""
    cuts = [n / 100 for n in range(0, 301)]
    options = [(*_at(found, cut, tie, prior), cut, tie, prior)
               for prior in priors for tie in ties for cut in cuts]
    fit = [o for o in options if o[1] <= MAX_DISTRACTORS]
    return max(fit, key=lambda o: (o[0], -o[1]))


async def bench() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        corpus = await build_corpus(Path(tmp))
        store = await FileBackend.open(Path(tmp) / "file")
        try:
            for episode in corpus.episodes:
                await store.upsert(episode)
            per_set = {name: await candidates(store, tasks, corpus) for name, tasks in SETS}
        finally:
            await store.aclose()
    print(f"ceiling of recall with the working set at <= {MAX_DISTRACTORS:g} distractors per "
          f"context, values chosen on each set itself (an oracle), file layer")
    print(f"  {'set':<6} {'candidates: recall':>19} {'distr.':>7}   {'one cut: recall':>16} "
          f"{'distr.':>7} {'cut':>5}   {'cut + tie: recall':>18} {'distr.':>7} {'cut':>5} "
          f"{'tie':>4}   {'+ kind prior: recall':>21} {'distr.':>7} prior")
    every: list[tuple[list[Seen], int]] = []
    for name, found in [*per_set.items(), ("all", [])]:
        found = found or every
        every += found if name != "all" else []
        r0, d0 = _at(found, 0.0, None)
        r1, d1, c1, _, _ = best(found, (None,))
        r2, d2, c2, t2, _ = best(found, TIES)
        r3, d3, _, _, p3 = best(found, TIES, PRIORS)
        print(f"  {name:<6} {r0:>19.0%} {d0:>7.2f}   {r1:>16.0%} {d1:>7.2f} {c1:>5.2f}   "
              f"{r2:>18.0%} {d2:>7.2f} {c2:>5.2f} {t2!s:>4}   {r3:>21.0%} {d3:>7.2f} {p3}")


def main() -> None:
    asyncio.run(bench())


if __name__ == "__main__":
    main()
