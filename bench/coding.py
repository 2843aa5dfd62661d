"""Coding-memory retrieval on the coding corpus (``tests/coding_corpus.py``: a project's
memories and questions that reach them through an entity or ask what is true now). Same run:
plain BM25, each layer alone, and ``auto`` as every process meets it: the process holding the
graph, and another process at the same time (a second agent session, a CLI call, a hook),
which answers from the journal.

    python -m bench.coding
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

from backends.protocol import MemoryBackend, upsert_all
from bench import other_process
from bench.bm25 import BM25
from tests.coding_corpus import GROUP, Project, Question, project

TOP = 10


@dataclass(frozen=True)
class Quality:
    r10: dict[str, float]
    mrr: dict[str, float]
    p95_ms: float


def _score(questions: Sequence[Question], rankings: Sequence[Sequence[str]],
           latencies: Sequence[float]) -> Quality:
    kinds = ["all", *sorted({q.kind for q in questions})]
    r10: dict[str, float] = {}
    mrr: dict[str, float] = {}
    for kind in kinds:
        rows = [(q, r) for q, r in zip(questions, rankings, strict=True)
                if kind == "all" or q.kind == kind]
        r10[kind] = statistics.fmean(len(q.relevant.intersection(r[:TOP])) / len(q.relevant)
                                     for q, r in rows)
        mrr[kind] = statistics.fmean(next((1 / n for n, key in enumerate(r[:TOP], 1)
                                           if key in q.relevant), 0.0) for q, r in rows)
    ms = sorted(1000 * s for s in latencies)
    return Quality(r10, mrr, ms[min(len(ms) - 1, int(0.95 * len(ms)))])


async def measure(backend: MemoryBackend, data: Project) -> Quality:
    await upsert_all(backend, data.memories)
    return _score(data.questions, *await ask(backend, data.questions))


async def ask(backend: MemoryBackend, questions: Sequence[Question]
              ) -> tuple[list[list[str]], list[float]]:
    """The ranking of each question's top ``TOP``, and how long each search took."""
    rankings, latencies = [], []
    for question in questions:
        started = time.perf_counter()
        hits = await backend.search(question.text, group_ids=[GROUP], limit=TOP)
        latencies.append(time.perf_counter() - started)
        rankings.append([hit.episode.id for hit in hits])
    return rankings, latencies


def bm25_quality(data: Project) -> Quality:
    index = BM25((e.id, f"{e.name}\n{e.body}") for e in data.memories)
    rankings, latencies = [], []
    for question in data.questions:
        started = time.perf_counter()
        rankings.append([key for key, _ in index.search(question.text, TOP)])
        latencies.append(time.perf_counter() - started)
    return _score(data.questions, rankings, latencies)


def table(results: dict[str, Quality], data: Project) -> str:
    kinds = list(next(iter(results.values())).r10)
    counts = {k: sum(q.kind == k or k == "all" for q in data.questions) for k in kinds}
    lines = [f"coding memory: {len(data.memories)} memories, {len(data.questions)} questions, "
             f"top {TOP}; R@10 / MRR",
             f"{'retriever':<22}" + "".join(f"{f'{k} ({counts[k]})':>16}" for k in kinds)
             + f"{'p95 ms':>9}"]
    for name, quality in results.items():
        lines.append(f"{name:<22}" + "".join(
            f"{f'{quality.r10[k]:.3f} / {quality.mrr[k]:.3f}':>16}" for k in kinds)
            + f"{quality.p95_ms:>9.2f}")
    return "\n".join(lines)


async def run() -> str:
    data = project()
    results = {"plain BM25": bm25_quality(data)}
    results.update(await other_process.on_every_layer(
        "bench.coding", lambda store: measure(store, data),
        lambda answer: _score(data.questions, answer["rankings"], answer["latencies"])))
    return table(results, data)


async def _ask_all(store: MemoryBackend) -> dict[str, object]:
    rankings, latencies = await ask(store, project().questions)
    return {"rankings": rankings, "latencies": latencies}


def main() -> None:
    other_process.main(run, _ask_all)


if __name__ == "__main__":
    main()
