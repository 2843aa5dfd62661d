"""Context recall with and without the working set (issue 30), on the later task sets of
``bench.context_tasks``, in one run, on the file layer (every layer answers alike:
``bench.context_recall``).

    python -m bench.context_workset [--grid] [--before] [--explain]

"Without" is ``build_context`` given the task alone; "with" is the same task given the files a
person would open first (``bench.context_files``, labelled before this was measured). The
working set's parameters (``Thresholds.work``: how much a tie raises a memory; ``tie``:
the tie that keeps a memory whatever the floors; ``elsewhere``: the share of the best an untied
memory naming only other files needs) are chosen by cross-validation: for each set, the values
that do best on the other sets (recall, less a distractor penalty) are reported on it, so no
figure is of values chosen on its own tasks. ``--before`` first runs this bench as it was at
``BEFORE`` (the branch point of issue 30's third round, whose co-change and description
floor were measured and not taken: docs/CONTEXT.md), in a process of its own, in the same
run. ``--explain`` prints, per task of each set at its chosen values, each label missed and
each distractor shown with the key that brought it (``explain``).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from backends.protocol import MemoryBackend
from bench.context_files import FILES
from bench.context_recall import (
    FIXTURE,
    Corpus,
    Score,
    build_corpus,
    extract,
    score,
    shown,
    signatures,
)
from bench.context_tasks import BLIND, COLD, FINAL, FRESH, FROST, LATER, NEXT, LabelledTask
from bench.context_worker import PROJECT
from fallback import FileBackend
from memory.agent.scopes import project_group
from memory.context import build_context
from memory.context.file_memories import AREA, NAMED, file_memories
from memory.context.thresholds import Thresholds

SETS = (("fresh", FRESH), ("later", LATER), ("next", NEXT), ("final", FINAL), ("blind", BLIND),
        ("cold", COLD), ("frost", FROST))
GRID = [(0.1, tie, elsewhere) for tie in (0.6, 0.7, 0.8, 0.9, 1.0) for elsewhere in (0.0, 1.0, 2.0)]
"""(work, tie, elsewhere): elsewhere 0 leaves the rule out, 2 leaves every such memory out"""
BEFORE = "7261df67b9b153e53903f032116bd6ab99f2264b"
DISTRACTOR_COST = 0.02
"""recall given up for one more distractor per context when choosing values"""


async def _run(store: MemoryBackend, tasks: Sequence[LabelledTask], corpus: Corpus,
               shows: Mapping[str, list[str]], limits: Thresholds,
               files: bool, markdowns: dict[str, str] | None = None) -> list[Score]:
    scores = []
    for task in tasks:
        built = task.build()
        if files:
            built = built.model_copy(update={"files": FILES[task.name]})
        result = await build_context(store, built, project_id=PROJECT, phase=task.phase,
                                     thresholds=limits)
        if markdowns is not None:
            markdowns[task.name] = result.markdown
        scores.append(score(task, {"markdown": result.markdown,
                                   "tokens_used": result.tokens_used,
                                   "budget": result.budget}, corpus, shows))
    return scores


async def explain(store: MemoryBackend, task: LabelledTask, markdown: str, bare: str,
                  corpus: Corpus, shows: Mapping[str, list[str]]) -> None:
    """What one task's context with the working set missed, and which distractors it showed,
    each with the key that ties it to the working set (per working file: ``named``, ``area``,
    ``described``), or ``words`` when none does; a miss says whether the task's words alone
    showed it."""
    names = {e.id: f"{e.kind}: {e.name[:80]}" for e in corpus.episodes}
    keys: dict[str, list[str]] = {}
    for path in FILES[task.name]:
        for hit in await file_memories(store, [path], [project_group(PROJECT)]):
            kind = {NAMED: "named", AREA: "area"}.get(hit.score, f"described {hit.score:.2f}")
            keys.setdefault(hit.episode.id, []).append(f"{kind} by {path}")
    seen, alone = shown(markdown, shows), shown(bare, shows)
    needed = corpus.needed[task.name]
    print(f"--- {task.name} ({' '.join(sorted(task.areas))})")
    for key in needed:
        if key not in seen:
            print(f"  missed      {names[key]} [{'; '.join(keys.get(key, ['no tie']))}]"
                  f"{' (words alone showed it)' if key in alone else ''}")
    for key in sorted(seen - set(needed)):
        if corpus.areas.get(key) not in task.areas:
            print(f"  distractor  {names[key]} ({corpus.areas.get(key)}) "
                  f"[{'; '.join(keys.get(key, ['words']))}]")


def _totals(scores: Sequence[Score]) -> tuple[float, float, int]:
    found, needed = sum(s.found for s in scores), sum(s.needed for s in scores)
    stray = [s.distractors for s in scores]
    return found / needed, sum(stray) / len(stray), max(stray)


def _merit(scores: Sequence[Score]) -> float:
    recall, distractors, _ = _totals(scores)
    return recall - DISTRACTOR_COST * distractors


Values = tuple[float, float, float]


def _chosen(grid: Mapping[Values, Mapping[str, Sequence[Score]]], held_out: str) -> Values:
    """The values that do best on every set but ``held_out`` (ties: the smaller ``work``)."""
    others = [n for n, _ in SETS if n != held_out]
    return max(GRID, key=lambda v: (_merit([s for n in others for s in grid[v][n]]), -v[0]))


def _limits(base: Thresholds, values: Values) -> Thresholds:
    return base._replace(work=values[0], tie=values[1], elsewhere=values[2])


def before(folder: Path) -> subprocess.Popen[bytes]:
    """This bench as it was at ``BEFORE``, started in a process of its own (beside a link to
    the shared fixtures, which it finds next to its tree)."""
    folder.mkdir()
    (folder / "shared").symlink_to(FIXTURE.parents[1])
    code = extract(BEFORE, folder / "tree")
    return subprocess.Popen([sys.executable, "-P", "-m", "bench.context_workset"], cwd=code,
                            env={**os.environ, "PYTHONPATH": str(code)}, stdout=subprocess.PIPE)


async def bench() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        earlier = before(Path(tmp) / "before") if "--before" in sys.argv else None
        corpus = await build_corpus(Path(tmp))
        shows = signatures(corpus.episodes)
        store = await FileBackend.open(Path(tmp) / "file")
        try:
            for episode in corpus.episodes:
                await store.upsert(episode)
            base = Thresholds()
            bare: dict[str, str] = {}
            without = {name: await _run(store, tasks, corpus, shows, base, False, bare)
                       for name, tasks in SETS}
            grid = {values: {name: await _run(store, tasks, corpus, shows,
                                              _limits(base, values), True)
                             for name, tasks in SETS} for values in GRID}
            chosen = {name: _chosen(grid, name) for name, _ in SETS}
            if "--explain" in sys.argv:
                for name, tasks in SETS:
                    print(f"=== {name} at {chosen[name]}")
                    markdowns: dict[str, str] = {}
                    await _run(store, tasks, corpus, shows, _limits(base, chosen[name]), True,
                               markdowns)
                    for task in tasks:
                        await explain(store, task, markdowns[task.name], bare[task.name],
                                      corpus, shows)
        finally:
            await store.aclose()
        if earlier is not None:
            print(f"--- before ({BEFORE[:7]}):\n{earlier.communicate()[0].decode()}--- now:")
    print(f"context recall with and without the working set, file layer, {len(corpus.episodes)}"
          f" memories; values (work, tie, elsewhere) chosen on the other sets; grid {GRID}")
    print(f"  {'set':<6} {'tasks':>5}  {'without: recall':>16} {'distr. mean/max':>16}   "
          f"{'with: recall':>13} {'distr. mean/max':>16}   values")
    every_without: list[Score] = []
    every_with: list[Score] = []
    for name, tasks in SETS:
        r0, d0, m0 = _totals(without[name])
        r1, d1, m1 = _totals(grid[chosen[name]][name])
        every_without += without[name]
        every_with += grid[chosen[name]][name]
        print(f"  {name:<6} {len(tasks):>5}  {r0:>16.0%} {d0:>11.2f} / {m0:<2}   {r1:>13.0%} "
              f"{d1:>11.2f} / {m1:<2}   {chosen[name]}")
    r0, d0, m0 = _totals(every_without)
    r1, d1, m1 = _totals(every_with)
    print(f"  {'all':<6} {len(every_with):>5}  {r0:>16.0%} {d0:>11.2f} / {m0:<2}   {r1:>13.0%} "
          f"{d1:>11.2f} / {m1:<2}")
    if "--grid" in sys.argv:
        for values in GRID:
            r, d, m = _totals([s for n, _ in SETS for s in grid[values][n]])
            print(f"  grid {values}: recall {r:.0%} distractors {d:.2f} / {m}")


def main() -> None:
    asyncio.run(bench())


if __name__ == "__main__":
    main()
