"""Does the context bring what a task needs? Recall, distractors and budget use of
``build_context`` on a payments service's memory: the Auto-Claude fixture spec, imported by the
real importer, and ``bench.context_history`` (two more specs and the project's other areas),
for the labelled tasks of ``bench.context_tasks``.

    python -m bench.context_recall [--ours] [--explain]

Each selection runs in processes of its own (``bench/context_worker.py``) on three layers: the
file layer, the graph layer, and a non-holder: an ``auto`` process on a home whose graph this
process holds, answering from the journal. The earlier selections of ``BASELINES`` (issue 17's
third round, main before its ninth) are extracted from git and put first on the worker's
``PYTHONPATH``, measured in the same run; "ours" is the working tree (``--ours``: it alone).
The tasks the values were chosen on, the held-out tasks, the fresh tasks (labelled and
committed before the fourth round), the later ones (before the fifth), the next ones (before
the sixth) and the final ones (before the seventh) are reported apart.
So are the blind ones, labelled and committed before anything was measured on them.
So are the cold ones, labelled and committed likewise before anything was measured on them.
So are the frost ones, labelled and committed likewise before anything was measured on them.

A memory counts as shown when one of its texts that no other memory has (its name, or a field
of its body) appears in the context; recall is the share of labelled memories shown, a
distractor is a shown memory, not labelled for the task, from an area the task does not touch.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends.model import Episode
from backends.protocol import upsert_all
from bench.context_history import FIXTURE_SPEC, SPEC_AREAS, write_history
from bench.context_tasks import (
    BLIND,
    COLD,
    FINAL,
    FRESH,
    FROST,
    HELD_OUT,
    LATER,
    NEXT,
    TASKS,
    LabelledTask,
)
from bench.context_worker import PROJECT
from fallback import FileBackend
from memory import Config
from memory.context.format import one_line
from memory.importers.auto_claude_import import import_specs
from memory.store.dual import open_dual
from migrate.ledger import Ledger

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT.parent / "shared" / "fixtures" / "auto-claude"
# "before 17" (4ebefa8) needs filelock, which the project no longer installs: its figures are
# in docs/CONTEXT.md.
BASELINES = {
    "round 3": "d240113307956ae7dbbc633b549a127028ff261f",  # its third round, before FRESH
    "round 8": "cc8ffb91e43d26ce00eb4686e141d6578505ee13",  # main before the ninth round
}
ALL_TASKS = (*TASKS, *HELD_OUT, *FRESH, *LATER, *NEXT, *FINAL, *BLIND, *COLD, *FROST)
SETS = (("tuned", TASKS), ("  held out", HELD_OUT), ("  fresh", FRESH), ("  later", LATER),
        ("  next", NEXT), ("  final", FINAL), ("  blind", BLIND), ("  cold", COLD),
        ("  frost", FROST))
LAYERS = ("file", "graph", "non-holder")
SIGNATURE_CHARS = 48
MIN_FIELD_CHARS = 20
TARGET_RECALL, TARGET_DISTRACTORS = 0.80, 2


@dataclass(frozen=True)
class Corpus:
    episodes: list[Episode]
    areas: dict[str, str]
    needed: dict[str, list[str]]
    """each task's labelled memories, by id"""


async def build_corpus(folder: Path) -> Corpus:
    """The fixture imported as ``dualmem migrate --from-auto-claude`` does, and the history."""
    store = await FileBackend.open(folder / "staging")
    try:
        ledger = Ledger.open(folder / "ledger.sqlite3")
        await import_specs(FIXTURE, PROJECT, store, ledger, specs=[FIXTURE_SPEC])
        areas = await write_history(store, PROJECT)
        episodes = [e async for e in store.scan()]
    finally:
        await store.aclose()
    for episode in episodes:
        data = episode.data
        if episode.id not in areas and isinstance(data, dict):
            areas[episode.id] = SPEC_AREAS[data["spec"]]
    return Corpus(episodes, areas, {t.name: [_resolve(episodes, label) for label in t.needed]
                                    for t in ALL_TASKS})


def _resolve(episodes: Sequence[Episode], label: str) -> str:
    kind, text = label.split(":", 1)
    found = [e.id for e in episodes
             if e.kind == kind and text.casefold() in f"{e.name}\n{e.body}".casefold()]
    if len(found) != 1:
        raise ValueError(f"label {label!r} names {len(found)} memories, not one")
    return found[0]


def signatures(episodes: Sequence[Episode]) -> dict[str, list[str]]:
    """Per memory, the texts that show it: its name as a bullet's lead (``**name`` or ``- name``)
    and its body's longer text fields, each cut to its start, kept only when no other memory
    has the same text."""
    texts: dict[str, list[str]] = {}
    for episode in episodes:
        name = one_line(episode.name)[:SIGNATURE_CHARS]
        found = [f"**{name}", f"- {name}"]
        data = episode.data
        fields: Iterable[Any] = data.values() if isinstance(data, dict) else [episode.body]
        found += [one_line(v)[:SIGNATURE_CHARS] for v in fields
                  if isinstance(v, str) and len(v) >= MIN_FIELD_CHARS and v != episode.name]
        texts[episode.id] = found
    owners = Counter(text for found in texts.values() for text in set(found))
    return {key: [t for t in found if owners[t] == 1] for key, found in texts.items()}


@dataclass(frozen=True)
class Score:
    recall: float
    found: int
    needed: int
    distractors: int
    used: int
    budget: int


def shown(markdown: str, shows: Mapping[str, list[str]]) -> set[str]:
    return {key for key, found in shows.items() if any(s in markdown for s in found)}


def score(task: LabelledTask, result: Mapping[str, Any], corpus: Corpus,
          shows: Mapping[str, list[str]]) -> Score:
    shown_ = shown(result["markdown"], shows)
    needed = corpus.needed[task.name]
    found = sum(key in shown_ for key in needed)
    stray = sum(corpus.areas.get(key) not in task.areas for key in shown_ - set(needed))
    return Score(found / len(needed), found, len(needed), stray, result["tokens_used"],
                 result["budget"])


def _worker(code: Path, layer: str, path: Path, tasks: Path,
            episodes: Path | None = None) -> dict[str, Any]:
    script = ROOT / "bench" / "context_worker.py"
    env = {**os.environ, "PYTHONPATH": str(code)}
    args = [sys.executable, "-P", str(script), layer, str(path), str(tasks)]
    done = subprocess.run([*args, *([str(episodes)] if episodes else [])], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"worker {layer} failed:\n{done.stderr[-3000:]}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def extract(commit: str, folder: Path) -> Path:
    """The tree of ``commit``, written to ``folder``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


async def _measure(code: Path, home: Path, folder: Path, tasks: Path,
                   episodes: Path) -> dict[str, dict[str, Any]]:
    runs = {
        "file": _worker(code, "file", folder / "file", tasks, episodes),
        "graph": _worker(code, "graph", folder / "graph", tasks, episodes),
        "non-holder": _worker(code, "auto", home, tasks),
    }
    if runs["non-holder"]["holds_graph"] is not False:
        raise RuntimeError("the non-holder process held the graph")
    return runs


def _row(label: str, scores: Sequence[Score]) -> str:
    found, needed = sum(s.found for s in scores), sum(s.needed for s in scores)
    stray = [s.distractors for s in scores]
    use = sorted(s.used / s.budget for s in scores if s.budget)
    over = sum(s.used > s.budget for s in scores)
    return (f"  {label:<18} recall {found:>3}/{needed:<3} {found / needed:5.0%}  worst task "
            f"{min(s.recall for s in scores):4.0%}   distractors/context mean "
            f"{sum(stray) / len(stray):4.2f} max {max(stray)}   budget use median "
            f"{use[len(use) // 2]:4.0%} max {use[-1]:4.0%}   over budget {over}")


async def bench(baselines: Mapping[str, str], *, explaining: bool = False) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus = await build_corpus(folder)
        shows = signatures(corpus.episodes)
        episodes, tasks = folder / "episodes.jsonl", folder / "tasks.json"
        episodes.write_text("".join(e.model_dump_json() + "\n" for e in corpus.episodes))
        tasks.write_text(json.dumps([{"name": t.name, "task": t.task, "phase": t.phase.value}
                                     for t in ALL_TASKS]))
        kinds = Counter(e.kind for e in corpus.episodes)
        sets = ", ".join(f"{name.strip()} {len(group)} tasks with "
                         f"{sum(len(corpus.needed[t.name]) for t in group)} labels"
                         for name, group in SETS)
        print(f"context recall: {len(corpus.episodes)} memories "
              f"({', '.join(f'{n} {k}' for k, n in kinds.most_common())}); {sets}; "
              f"targets: recall >= {TARGET_RECALL:.0%}, "
              f"<= {TARGET_DISTRACTORS} distractors per context, never over budget")
        home = folder / "home"
        holder = await open_dual(Config(home=home))
        try:
            await upsert_all(holder, corpus.episodes)
            await holder.catch_up()
            codes = {f"{name} ({commit[:7]})": extract(commit, folder / name.replace(" ", "-"))
                     for name, commit in baselines.items()}
            codes["ours"] = ROOT
            runs = {name: await _measure(code, home, folder / name.split()[0], tasks, episodes)
                    for name, code in codes.items()}
        finally:
            await holder.aclose()
    by_name = {t.name: t for t in ALL_TASKS}
    table: dict[tuple[str, str], list[Score]] = {}
    for name, layers in runs.items():
        for layer, run in layers.items():
            table[name, layer] = [score(by_name[r["name"]], r, corpus, shows)
                                  for r in run["results"]]
    for layer in LAYERS:
        print(f"{layer} layer" if layer != "non-holder" else "non-holder process (auto, "
              "the graph held by another process)")
        for name in runs:
            start = 0
            for label, group in SETS:
                print(_row(name if label == "tuned" else label,
                           table[name, layer][start:start + len(group)]))
                start += len(group)
    print("per task, file layer / graph layer, ours: found/needed (distractors)")
    for task, file, graph in zip(ALL_TASKS, table["ours", "file"], table["ours", "graph"],
                                 strict=True):
        print(f"  {task.name:<20} {file.found}/{file.needed} ({file.distractors})   "
              f"{graph.found}/{graph.needed} ({graph.distractors})   "
              f"tokens {file.used}/{file.budget}")
    if explaining:
        for layer in ("file", "graph"):
            print(f"=== ours, {layer} layer")
            for task, run in zip(ALL_TASKS, runs["ours"][layer]["results"], strict=True):
                explain(task, run, corpus, shows)


def explain(task: LabelledTask, run: Mapping[str, Any], corpus: Corpus,
            shows: Mapping[str, list[str]]) -> None:
    """What one task's context missed and what it showed from elsewhere."""
    names = {e.id: f"{e.kind}: {e.name[:90]}" for e in corpus.episodes}
    seen = shown(run["markdown"], shows)
    print(f"--- {task.name}: {run['tokens_used']}/{run['budget']} tokens")
    for key in corpus.needed[task.name]:
        if key not in seen:
            print(f"  missed      {names[key]}")
    for key in seen - set(corpus.needed[task.name]):
        if corpus.areas.get(key) not in task.areas:
            print(f"  distractor  {names[key]} ({corpus.areas.get(key)})")


def main() -> None:
    args = sys.argv[1:] if __name__ == "__main__" else []
    baselines = {} if "--ours" in args else BASELINES
    asyncio.run(bench(baselines, explaining="--explain" in args))


if __name__ == "__main__":
    main()
