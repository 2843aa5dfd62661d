"""The ceiling of context recall with the working set (issue 30): with the candidates the
selection sees, the best recall any single threshold could reach at <= 2 distractors per
context, chosen per set by an oracle (on the set itself: an upper bound, not a figure).

    python -m bench.context_ceiling [MODEL]    # MODEL: a local model's folder or cached name

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

Then the signals that might separate a needed memory from a distractor sharing its words, each
a column of the same oracle (``signals_table``; computed over the journal's memories,
``Signals``): a memory not tied by a named file needs the summed rarity (IDF) of the words it
shares with the task and the working files' descriptions; a named file ties only if few
memories name it (``tests/conftest.py`` is named by many); a memory naming no file joins the
folder whose memories hold most of its rare words, and a working file's folder ties it; and
all three. A signal whose oracle cannot reach the target is ruled out.

With a local model (``dualmem[semantic]``, ``backends.graph.local_model``), a signal that reads
meaning (``meaning_table``): a memory not tied by a named file is kept only if the cosine
between its text and the task's description (or the best over the task's description and the
working files' descriptions) reaches a gate, alone and with the rarity gate as well.

The context's budget, the per-file cap and the rendering are left out (they only remove), so
the figures bound what a rule over these candidates can do.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

import memory.context.assemble as assemble
from backends.graph import local_model
from backends.kinds import ADR, GOTCHA, PATTERN
from backends.model import Episode
from backends.search.ranking import search_text, terms
from bench.context_files import FILES
from bench.context_recall import Corpus, build_corpus
from bench.context_tasks import LabelledTask
from bench.context_worker import PROJECT
from bench.context_workset import SETS
from fallback import FileBackend
from memory.agent.scopes import CODEBASE_DISCOVERY
from memory.agent.validity import in_force
from memory.context import build_context
from memory.context.budget import Category
from memory.context.file_memories import folder_of, paths_named
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
    rare: float = 0.0
    """the IDF of the words it shares with the task and the working files' descriptions,
    summed, over the largest IDF (one word found in one memory alone: 1)"""
    weight: float = 1.0
    """for a memory naming a working file: 1 / how many memories name that file (the
    strongest such key)"""
    area: bool = False
    """a memory naming no file whose inferred area is a working file's folder"""
    meaning: float = 0.0
    """the model's cosine between its text and the task's description"""
    meaning_files: float = 0.0
    """the best cosine between its text and the task's or a working file's description"""


class Signals:
    """What the journal's memories say about each other, for the candidate signals: each
    word's rarity (IDF over the memories), how many memories name each file, and the area of
    a memory naming no file (the folder whose memories hold most of its rare words)."""

    def __init__(self, episodes: Sequence[Episode]) -> None:
        self.words = {e.id: frozenset(terms(search_text(e))) for e in episodes}
        df = Counter(w for words in self.words.values() for w in words)
        top = math.log(len(episodes))
        self.idf = {w: math.log(len(episodes) / n) / top for w, n in df.items()}
        self._named = {e.id: paths_named(e) for e in episodes}
        self.naming = Counter(p for named in self._named.values() for p in named)
        self.descriptions = {p: d for e in episodes if e.kind == CODEBASE_DISCOVERY
                             and isinstance(e.data, dict)
                             and isinstance(d := e.data.get("description"), str)
                             for p in paths_named(e)}
        in_folder: dict[str, Counter[str]] = defaultdict(Counter)
        for e in episodes:
            for folder in {folder_of(p) for p in paths_named(e) if "/" in p}:
                in_folder[folder].update(self.words[e.id])
        self.area: dict[str, str] = {}
        for e in episodes:
            if any("/" in p for p in paths_named(e)):
                continue
            fit = {f: sum(self.idf[w] * c[w] / df[w] for w in self.words[e.id])
                   for f, c in in_folder.items()}
            if fit and max(fit.values()) > 0:
                self.area[e.id] = max(fit, key=lambda f: fit[f])

    def rare(self, key: str, text: Iterable[str]) -> float:
        query = frozenset(w for t in text for w in terms(t))
        return sum(self.idf[w] for w in self.words.get(key, frozenset()) & query)

    def weight(self, key: str, files: Sequence[str]) -> float:
        named = [f for f in files if f in self.names(key)]
        return max((1 / self.naming[f] for f in named), default=1.0)

    def names(self, key: str) -> frozenset[str]:
        return self._named.get(key, frozenset())

    def in_area(self, key: str, files: Sequence[str]) -> bool:
        area = self.area.get(key)
        folders = {folder_of(f) for f in files} - {"", "."}
        return area is not None and any(f == area or f.startswith(f"{area}/") for f in folders)


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


class Meaning:
    """Each memory's text embedded once by the model, for the cosines to a task's texts."""

    def __init__(self, model: local_model.LocalEmbedder, episodes: Sequence[Episode]) -> None:
        self.model = model
        self.vectors = dict(zip((e.id for e in episodes),
                                model.embed([search_text(e) for e in episodes]), strict=True))

    def to(self, texts: Sequence[str]) -> Callable[[str], tuple[float, float]]:
        """A memory's cosine to the first text (the task's), and its best over all of them
        (an empty text has no vector: cosine 0)."""
        given = self.model.embed(texts)

        def cosines(key: str) -> tuple[float, float]:
            memory = self.vectors.get(key)
            if memory is None:
                return 0.0, 0.0
            near = given @ memory
            return float(near[0]), float(near.max())

        return cosines


async def candidates(store: FileBackend, tasks: Sequence[LabelledTask], corpus: Corpus,
                     meaning: Meaning | None = None) -> list[tuple[list[Seen], int]]:
    """Each task's candidates, and how many memories it needs."""
    signals = Signals(corpus.episodes)
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
            files = FILES[task.name]
            text = [built.description, *(signals.descriptions.get(f, "") for f in files)]
            cosines = meaning.to(text) if meaning else lambda _: (0.0, 0.0)
            seen = [Seen(share, tie, key in needed,
                         key not in needed and corpus.areas.get(key) not in task.areas,
                         kind in CONVENTIONS, signals.rare(key, text),
                         signals.weight(key, files), signals.in_area(key, files),
                         *cosines(key))
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


RARES = tuple(n / 10 for n in range(0, 21))
"""the summed rarity a memory not naming a working file needs (0: no such rule)"""
WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.34, 0.5, 1.0)
"""the weight a named file's key needs to tie its memory (0: every named file ties)"""


@dataclass(frozen=True)
class Rule:
    """One choice of the signals' oracle: a cut, a tie, the rarity gate, the named-file
    weight, and whether an inferred area ties a memory naming no file."""

    recall: float
    distractors: float
    cut: float
    tie: float | None
    rare: float
    weight: float
    area: bool
    meaning: float = -1.0


def oracle(found: Sequence[tuple[list[Seen], int]], *, rares: Sequence[float] = (0.0,),
           weights: Sequence[float] = (0.0,), areas: Sequence[bool] = (False,),
           meanings: Sequence[float] = (-1.0,), files: bool = False) -> Rule:
    """The best recall at <= ``MAX_DISTRACTORS`` over cut + tie with the signals: a memory
    not tied by a strong named file needs ``rare`` and a cosine of ``meaning`` (to the task,
    or with ``files`` the best to the task and the working files' descriptions); a named file
    of weight under ``weight`` ties nothing; with ``area``, a memory naming no file whose
    inferred area is a working folder is tied as a named one."""
    seen = [s for xs, _ in found for s in xs]
    share, tie, rare, weight, near = (
        np.array([getattr(s, f) for s in seen], dtype=float)
        for f in ("share", "tie", "rare", "weight", "meaning_files" if files else "meaning"))
    needed, stray, area = (np.array([getattr(s, f) for s in seen], dtype=float)
                           for f in ("needed", "distractor", "area"))
    need, tasks = sum(n for _, n in found), len(found)
    cuts = np.arange(0, 301) / 100
    above = share[None, :] >= cuts[:, None]
    options = []
    for w in weights:
        named = tie >= 1.0
        strong = named & (weight >= w)
        tied_by = np.where(named & ~strong, 0.0, tie)
        for a in areas:
            ties_as = np.where(area > 0, np.maximum(tied_by, 1.0), tied_by) if a else tied_by
            for r, m in itertools.product(rares, meanings):
                gate = strong | ((rare >= r) & (near >= m))
                for t in TIES:
                    tied = ties_as >= t if t is not None else np.zeros_like(gate)
                    kept = gate[None, :] & (above | tied[None, :])
                    recall, distractors = kept @ needed / need, kept @ stray / tasks
                    fit = np.flatnonzero(distractors <= MAX_DISTRACTORS)
                    if not fit.size:
                        continue
                    i = max(fit, key=lambda i: (recall[i], -distractors[i]))
                    options.append(Rule(float(recall[i]), float(distractors[i]),
                                        float(cuts[i]), t, r, w, a, m))
    return max(options, key=lambda o: (o.recall, -o.distractors))


def _row(rule: Rule) -> str:
    return (f"{rule.recall:>4.0%} / {rule.distractors:.2f} (cut {rule.cut:.2f}, tie {rule.tie}, "
            f"rare {rule.rare:g}, weight {rule.weight:g}, area {'on' if rule.area else 'off'}, "
            f"meaning {rule.meaning:g})")


def signals_table(per_set: Mapping[str, list[tuple[list[Seen], int]]]) -> None:
    """The oracle's best with each signal, and with all three (issue 30, round 5)."""
    columns = {"cut + tie": {}, "+ rarity": {"rares": RARES},
               "+ file weight": {"weights": WEIGHTS}, "+ areas": {"areas": (False, True)},
               "all three": {"rares": RARES, "weights": WEIGHTS, "areas": (False, True)}}
    print(f"\nthe signals' ceiling: recall / distractors per context at <= {MAX_DISTRACTORS:g}, "
          "values chosen on each set itself (an oracle)")
    every = [x for found in per_set.values() for x in found]
    for name, found in [*per_set.items(), ("all", every)]:
        for column, grid in columns.items():
            print(f"  {name:<6} {column:<14} {_row(oracle(found, **grid))}")  # type: ignore[arg-type]


MEANINGS = (-1.0, *(n / 20 for n in range(0, 15)))
"""the cosine a memory not naming a working file needs (-1: no such rule)"""


def meaning_table(per_set: Mapping[str, list[tuple[list[Seen], int]]]) -> None:
    """The oracle's best with the model's cosine as a gate, alone and with rarity (round 6)."""
    columns = {"cut + tie": {}, "+ rarity": {"rares": RARES},
               "+ meaning": {"meanings": MEANINGS},
               "+ meaning, files": {"meanings": MEANINGS, "files": True},
               "+ meaning & rarity": {"meanings": MEANINGS, "rares": RARES},
               "+ m. files & rar.": {"meanings": MEANINGS, "rares": RARES, "files": True}}
    print(f"\nthe meaning signal's ceiling: recall / distractors per context at <= "
          f"{MAX_DISTRACTORS:g}, values chosen on each set itself (an oracle)")
    every = [x for found in per_set.values() for x in found]
    for name, found in [*per_set.items(), ("all", every)]:
        for column, grid in columns.items():
            print(f"  {name:<6} {column:<18} {_row(oracle(found, **grid))}",  # type: ignore[arg-type]
                  flush=True)


async def bench(model_name: str | None = None) -> None:
    model = local_model.embedder(model_name) if model_name else None
    with tempfile.TemporaryDirectory() as tmp:
        corpus = await build_corpus(Path(tmp))
        store = await FileBackend.open(Path(tmp) / "file")
        try:
            for episode in corpus.episodes:
                await store.upsert(episode)
            meaning = Meaning(model, corpus.episodes) if model else None
            per_set = {name: await candidates(store, tasks, corpus, meaning)
                       for name, tasks in SETS}
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
    if model is not None:
        meaning_table(per_set)
    else:
        signals_table(per_set)


def main() -> None:
    asyncio.run(bench(sys.argv[1] if len(sys.argv) > 1 else None))


if __name__ == "__main__":
    main()
