"""Search by meaning with a local model (``dualmem[semantic]``), lexical-only beside it in the
same run: the paraphrase set (``bench.paraphrase``), LoCoMo dev cross-validated, and what the
model costs (cold start, ms per 1,000 memories, peak memory).

    python -m bench.semantic MODEL        # a folder, or a model of the user's cache

Fusion values (``backends.graph.meaning``) are chosen by cross-validation: for each way of
taking three of the five dev conversations to tune on, the values best on those (R@10 + MRR)
are scored on the other two; the held-out scores of the ten splits are averaged. The rows:

- lexical: the file layer's ranking (the one every layer serves), top 10;
- cosine: the model's nearest memories alone;
- fused (CV): ``meaning.fuse`` of both, its values chosen on the tuning conversations;
- fused (product values): ``meaning.fuse`` at the values the product ships (with the weight
  that rises when the words match weakly);
- graph layer with the model: the product end to end (paraphrase set only: LoCoMo's 2,760
  memories through the graph take minutes).
"""

from __future__ import annotations

import asyncio
import itertools
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from backends.graph import local_model, meaning
from backends.model import Episode
from backends.protocol import upsert_all
from bench import coding, locomo, paraphrase
from tests import coding_corpus

Ranked = list[tuple[str, float]]
"""episode ids with their scores, best first"""
GRID = [(k, w) for k in (5.0, 10.0, 30.0, 60.0) for w in (0.5, 0.75, 1.0, 1.5, 2.0)]
"""(RRF_K, MEANING_WEIGHT) values tried"""


async def lexical(data: locomo.LoCoMo) -> dict[str, Ranked]:
    """The file layer's ranking of every question's conversation, the words' side of fusion."""
    from fallback import FileBackend

    found: dict[str, Ranked] = {}
    with tempfile.TemporaryDirectory() as scratch:
        store = await FileBackend.open(Path(scratch) / "files", watch=False)
        try:
            await upsert_all(store, data.items)
            for question in data.questions:
                hits = await store.search(question.text, group_ids=[question.group_id],
                                          limit=meaning.CANDIDATES)
                found[question.qid] = [(hit.episode.id, hit.score) for hit in hits]
        finally:
            await store.aclose()
    return found


def nearest(item_ids: Sequence[str], items: np.ndarray, groups: Mapping[str, np.ndarray],
            group: str, question: np.ndarray) -> Ranked:
    rows = groups[group]
    similarity = items[rows] @ question
    order = np.argsort(-similarity, kind="stable")[:meaning.CANDIDATES]
    return [(item_ids[rows[j]], float(similarity[j])) for j in order]


def fused(lex: Ranked, near: Ranked, k: float, w: float) -> list[str]:
    return [key for key, _ in meaning.fuse(lex, near, limit=locomo.TOP, k=k, weight=w)]


@dataclass(frozen=True)
class Embedded:
    """LoCoMo dev with the words' ranking and the model's vectors of every item and question."""

    data: locomo.LoCoMo
    lex: dict[str, Ranked]
    item_ids: list[str]
    items: np.ndarray
    questions: np.ndarray
    rows: dict[str, np.ndarray]
    """each conversation's item rows"""
    near: dict[str, Ranked]

    def nearest(self, group: str, vector: np.ndarray) -> Ranked:
        return nearest(self.item_ids, self.items, self.rows, group, vector)


def embedded(model: local_model.LocalEmbedder) -> Embedded:
    """LoCoMo dev embedded by ``model`` (about 150 s of CPU with all-MiniLM-L6-v2 int8)."""
    data = locomo.load()
    lex = asyncio.run(lexical(data))
    item_ids = [item.id for item in data.items]
    items = model.embed([item.body for item in data.items])
    questions = model.embed([q.text for q in data.questions])
    groups: dict[str, list[int]] = {}
    for i, item in enumerate(data.items):
        groups.setdefault(item.group_id, []).append(i)
    arrays = {g: np.asarray(rows) for g, rows in groups.items()}
    near = {q.qid: nearest(item_ids, items, arrays, q.group_id, questions[n])
            for n, q in enumerate(data.questions)}
    return Embedded(data, lex, item_ids, items, questions, arrays, near)


def locomo_rows(given: Embedded) -> list[str]:
    data, lex, near = given.data, given.lex, given.near
    runs = {"lexical": {q: [key for key, _ in r][:locomo.TOP] for q, r in lex.items()},
            "cosine": {q: [key for key, _ in r][:locomo.TOP] for q, r in near.items()},
            "fused (product values)": {q.qid: fused(lex[q.qid], near[q.qid], meaning.RRF_K,
                                                    meaning.meaning_weight(lex[q.qid]))
                                       for q in data.questions}}
    grid = {values: {q.qid: fused(lex[q.qid], near[q.qid], *values) for q in data.questions}
            for values in GRID}
    held = {name: cross_validated(data, {"as is": ranked})[0] for name, ranked in runs.items()}
    held["fused (CV)"], chosen = cross_validated(data, grid)
    lines = ["LoCoMo dev, held out (mean of 10 splits, 3 tune / 2 held out): "
             "R@10 / MRR / multi-hop R@10; values chosen: "
             + ", ".join(f"k={k:g} w={w:g}" for k, w in sorted(set(chosen))),
             *table_head()]
    for name, qualities in held.items():
        whole = "" if name == "fused (CV)" else _whole(data, runs[name])
        lines.append(table_row(name, qualities, whole))
    return lines


def cross_validated(data: locomo.LoCoMo, grid: Mapping[Any, Mapping[str, list[str]]]
                    ) -> tuple[list[locomo.Quality], list[Any]]:
    """For each three of the five conversations, the value of ``grid`` (value -> each
    question's ranking) best on them (R@10 + MRR), scored on the other two: the held-out
    qualities and the values chosen."""
    conversations = sorted({q.group_id for q in data.questions})
    held, chosen = [], []
    for tune in itertools.combinations(conversations, 3):
        tuning = [q for q in data.questions if q.group_id in tune]
        scored = [q for q in data.questions if q.group_id not in tune]
        best = max(grid, key=lambda v: _r10_mrr(locomo.score(tuning, grid[v], [0.0])))
        chosen.append(best)
        held.append(locomo.score(scored, grid[best], [0.0]))
    return held, chosen


def table_head() -> list[str]:
    return ["| ranking | R@10 | MRR | multi-hop R@10 | all five: R@10 / MRR / multi-hop |",
            "|---|---|---|---|---|"]


def table_row(name: str, qualities: Sequence[locomo.Quality], whole: str = "") -> str:
    """A row of held-out means."""
    mean = [statistics.fmean(getattr(q.overall, m) for q in qualities) for m in ("r10", "mrr")]
    multi = statistics.fmean(q.categories["multi-hop"].r10 for q in qualities)
    return f"| {name} | {mean[0]:.3f} | {mean[1]:.3f} | {multi:.3f} | {whole} |"


def _r10_mrr(quality: locomo.Quality) -> float:
    """What the tuning maximises: R@10, and MRR (which must not fall below the words')."""
    return quality.overall.r10 + quality.overall.mrr


def _whole(data: locomo.LoCoMo, ranked: Mapping[str, list[str]]) -> str:
    quality = locomo.score(data.questions, ranked, [0.0])
    multi = quality.categories["multi-hop"].r10
    return f"{quality.overall.r10:.3f} / {quality.overall.mrr:.3f} / {multi:.3f}"


async def _rankings(store: object, episodes: Sequence[Episode], questions: Mapping[str, str],
                    group: str) -> dict[str, list[str]]:
    """Each question's top ``coding.TOP`` (by its key) in ``store`` holding ``episodes``."""
    await upsert_all(store, episodes)  # type: ignore[arg-type]
    found = {}
    for key, text in questions.items():
        hits = await store.search(text, group_ids=[group],  # type: ignore[attr-defined]
                                  limit=coding.TOP)
        found[key] = [hit.episode.id for hit in hits]
    return found


async def _every_layer(model: local_model.LocalEmbedder, episodes: Sequence[Episode],
                       questions: Mapping[str, str], group: str
                       ) -> dict[str, dict[str, list[str]]]:
    """The rankings of the file layer (words only) and the graph layer with its built-in
    embedder and with ``model``, in the same run."""
    from backends.graph import GraphBackend
    from fallback import FileBackend

    found = {}
    with tempfile.TemporaryDirectory() as scratch:
        files = await FileBackend.open(Path(scratch) / "files", watch=False)
        try:
            found["lexical (file layer)"] = await _rankings(files, episodes, questions, group)
        finally:
            await files.aclose()
        for name, embedder in (("graph layer, built-in embedder", None),
                               ("graph layer, local model", model)):
            graph = await GraphBackend.open(Path(scratch) / name, embedder=embedder)
            try:
                found[name] = await _rankings(graph, episodes, questions, group)
            finally:
                await graph.aclose()
    return found


def paraphrase_rows(model: local_model.LocalEmbedder) -> list[str]:
    pairs = paraphrase.load()
    memories = model.embed([f"{p.id}\n{p.memory}" for p in pairs])
    cosine = {p.id: [pairs[j].id for j in np.argsort(-(memories @ q), kind="stable")]
              for p, q in zip(pairs, model.embed([p.query for p in pairs]), strict=True)}
    runs = asyncio.run(_every_layer(model, [p.episode() for p in pairs],
                                    {p.id: p.query for p in pairs}, paraphrase.GROUP))
    runs["cosine"] = cosine
    lines = [f"Paraphrase set ({len(pairs)} questions, one memory each): R@5 / MRR",
             "| ranking | R@5 | MRR |", "|---|---|---|"]
    for name, ranked in runs.items():
        found = paraphrase.score(pairs, ranked)
        lines.append(f"| {name} | {found.r5:.3f} | {found.mrr:.3f} |")
    return lines


def coding_rows(model: local_model.LocalEmbedder) -> list[str]:
    """The coding benchmark (``bench.coding``'s corpus): R@10 / MRR by kind of question."""
    data = coding_corpus.project()
    questions = {str(n): q.text for n, q in enumerate(data.questions)}
    runs = asyncio.run(_every_layer(model, data.memories, questions, coding_corpus.GROUP))
    scored = {name: coding._score(data.questions, [ranked[key] for key in questions],
                                  [0.0] * len(questions)) for name, ranked in runs.items()}
    kinds = list(next(iter(scored.values())).r10)
    return [f"Coding benchmark ({len(data.memories)} memories, {len(questions)} questions): "
            "R@10 / MRR", "| ranking | " + " | ".join(kinds) + " |",
            "|---|" + "---|" * len(kinds),
            *(f"| {name} | " + " | ".join(f"{q.r10[k]:.3f} / {q.mrr[k]:.3f}" for k in kinds)
              + " |" for name, q in scored.items())]


def hook_rows(name: str, runs: int = 5) -> list[str]:
    """The CPU time of a one-shot prompt hook (``dualmem hook prompt`` under ``auto``, a home of
    1,000 memories) without and with the local model kept in the home's settings: a one-shot
    process answers by words from the journal and never loads the model (``bench.cli_latency``
    runs each; the first round warms up)."""
    from bench import cli_latency
    from memory.store.settings import store_setting

    label = "dualmem hook prompt (auto)"
    cpu = {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        home, queries = cli_latency.project_home(folder, 1000)
        for setting in ("", f"local:{name}"):
            store_setting(home, "embedder", setting)
            timed = cli_latency.measure(folder, queries, "auto", runs)[label]
            cpu[setting or "lexical only"] = [1000 * used for _, used in timed]
    return [f"Prompt hook, CPU ms per call over {runs} runs (p50 / max): " + "; ".join(
        f"{which} {statistics.median(ms):.0f} / {max(ms):.0f}" for which, ms in cpu.items())]


COLD = """
import resource, sys, time
start = time.perf_counter()
from backends.graph import local_model
model = local_model.embedder(sys.argv[1])
model.embed(["exclusive lock on the db"])
first = time.perf_counter() - start
texts = [line for line in open(sys.argv[2]).read().splitlines() if line][:1000]
start, cpu = time.perf_counter(), time.process_time()
model.embed(texts)
per_1000 = (time.perf_counter() - start) * 1000 / len(texts) * 1000
cpu_1000 = (time.process_time() - cpu) * 1000 / len(texts) * 1000
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{first * 1000:.0f} {per_1000:.0f} {cpu_1000:.0f} {peak:.0f}")
"""


def cost_rows(name: str) -> list[str]:
    """Cold start (import, load, one query in a fresh process), ms per 1,000 LoCoMo memories,
    and the process's peak memory, on one thread."""
    data = locomo.load()
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as texts:
        texts.write("\n".join(item.body.replace("\n", " ") for item in data.items[:1000]))
        texts.flush()
        done = subprocess.run([sys.executable, "-c", COLD, name, texts.name], check=True,
                              capture_output=True, text=True)
    first, per_1000, cpu_1000, peak = done.stdout.split()
    return [f"Cost: cold start (import + load + one query) {first} ms; {per_1000} ms per "
            f"1,000 memories ({cpu_1000} ms of CPU: the wall time depends on the machine's "
            f"load); peak memory {peak} MB (this process: "
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB)"]


def main() -> None:
    name = sys.argv[1]
    model = local_model.embedder(name)
    started = time.perf_counter()
    print("\n".join(cost_rows(name)) + "\n", flush=True)  # each part as soon as it is done
    print("\n".join(paraphrase_rows(model)) + "\n", flush=True)
    print("\n".join(coding_rows(model)) + "\n", flush=True)
    print("\n".join(hook_rows(name)) + "\n", flush=True)
    print("\n".join(locomo_rows(embedded(model))), flush=True)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
