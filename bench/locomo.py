"""LoCoMo dev retrieval quality for any ``MemoryBackend``, next to plain BM25 from the same run.

Every item is stored in its own group (one per conversation); each question searches its own
group for the top 10. R@k: the share of a question's evidence in the top k; Hit@10: any evidence
in the top 10; MRR: 1/rank of the first evidence in the top 10. All averaged over questions.

The data set is read where it lies (``../shared/bench/locomo-dev`` beside the repository, or
``$DUALMEM_LOCOMO``) and never copied: its license (CC BY-NC 4.0) keeps it out of the repository.

    data = locomo.load()
    ours = await locomo.measure(backend, data)  # backend: any empty MemoryBackend
    print(locomo.table({locomo.BASELINE: locomo.bm25_quality(data), "my layer": ours}, data))
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from backends.model import Episode
from backends.protocol import MemoryBackend, upsert_all
from bench.bm25 import BM25

ENV = "DUALMEM_LOCOMO"
TOP = 10
BASELINE = "plain BM25"
TUNE = frozenset({"conv-26", "conv-30", "conv-41"})
"""the half of the dev conversations choices were tuned on (``backends.threads.REACH``); the
rest is held out"""


def dataset_folder(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    default = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "locomo-dev"
    return Path(env.get(ENV) or default)


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    group_id: str
    evidence: frozenset[str]
    category: str


@dataclass(frozen=True)
class LoCoMo:
    items: list[Episode]
    questions: list[Question]


def load(folder: Path | None = None) -> LoCoMo:
    folder = dataset_folder() if folder is None else folder
    items = [
        Episode.parse(id=row["id"], group_id=row["group_id"], kind="dialog_turn",
                      name=row["name"], body=row["body"], source="locomo",
                      created_at=row["created_at"])
        for row in _rows(folder / "items.jsonl")
    ]
    questions = [
        Question(row["qid"], row["query"], row["group_id"], frozenset(row["evidence"]),
                 row["category_name"])
        for row in _rows(folder / "queries.jsonl")
    ]
    return LoCoMo(items, questions)


def turns(folder: Path | None = None) -> dict[str, tuple[str, int, int]]:
    """Each item's conversation, session and turn."""
    folder = dataset_folder() if folder is None else folder
    return {row["id"]: (row["group_id"], row["session"], row["turn"])
            for row in _rows(folder / "items.jsonl")}


def _rows(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


@dataclass(frozen=True)
class Metrics:
    questions: int
    r5: float
    r10: float
    hit10: float
    mrr: float


@dataclass(frozen=True)
class Quality:
    overall: Metrics
    categories: dict[str, Metrics]
    p50_ms: float
    p95_ms: float


def _metrics(rows: Sequence[tuple[Question, Sequence[str]]]) -> Metrics:
    def recall(question: Question, ranked: Sequence[str], k: int) -> float:
        return len(question.evidence.intersection(ranked[:k])) / len(question.evidence)

    def reciprocal_rank(question: Question, ranked: Sequence[str]) -> float:
        return next((1 / rank for rank, key in enumerate(ranked[:TOP], 1)
                     if key in question.evidence), 0.0)

    return Metrics(
        questions=len(rows),
        r5=statistics.fmean(recall(q, r, 5) for q, r in rows),
        r10=statistics.fmean(recall(q, r, TOP) for q, r in rows),
        hit10=statistics.fmean(float(recall(q, r, TOP) > 0) for q, r in rows),
        mrr=statistics.fmean(reciprocal_rank(q, r) for q, r in rows),
    )


def score(
    questions: Sequence[Question], rankings: Mapping[str, Sequence[str]], latencies: Sequence[float]
) -> Quality:
    """Metrics from each question's ranked ids (by qid) and the search latencies in seconds."""
    rows = [(q, rankings[q.qid]) for q in questions]
    categories = sorted({q.category for q in questions})
    p50_ms, p95_ms = percentiles(latencies)
    return Quality(
        overall=_metrics(rows),
        categories={c: _metrics([row for row in rows if row[0].category == c]) for c in categories},
        p50_ms=p50_ms,
        p95_ms=p95_ms,
    )


def percentiles(seconds: Sequence[float]) -> tuple[float, float]:
    """p50 and p95 of latencies given in seconds, in milliseconds."""
    ms = sorted(1000 * s for s in seconds)
    return statistics.median(ms), ms[min(len(ms) - 1, int(0.95 * len(ms)))]


async def measure(backend: MemoryBackend, data: LoCoMo) -> Quality:
    """Store every item in ``backend`` (expected empty), then ask every question."""
    await upsert_all(backend, data.items)
    rankings: dict[str, list[str]] = {}
    latencies = []
    for question in data.questions:
        started = time.perf_counter()
        hits = await backend.search(question.text, group_ids=[question.group_id], limit=TOP)
        latencies.append(time.perf_counter() - started)
        rankings[question.qid] = [hit.episode.id for hit in hits]
    return score(data.questions, rankings, latencies)


def bm25_quality(data: LoCoMo) -> Quality:
    """The baseline: plain BM25 over each conversation's bodies."""
    groups = sorted({item.group_id for item in data.items})
    indexes = {
        group: BM25((item.id, item.body) for item in data.items if item.group_id == group)
        for group in groups
    }
    rankings: dict[str, list[str]] = {}
    latencies = []
    for question in data.questions:
        started = time.perf_counter()
        ranked = indexes[question.group_id].search(question.text, TOP)
        latencies.append(time.perf_counter() - started)
        rankings[question.qid] = [key for key, _ in ranked]
    return score(data.questions, rankings, latencies)


def table(results: Mapping[str, Quality], data: LoCoMo) -> str:
    """The quality table, with R@10 and MRR as ratios to ``BASELINE`` when it is present."""
    base = results.get(BASELINE)
    groups = len({item.group_id for item in data.items})
    lines = [
        f"LoCoMo dev: {len(data.items)} items in {groups} groups, {len(data.questions)} "
        f"questions; own group, top {TOP}",
        f"{'retriever':<16}{'R@5':>7}{'R@10':>7}{'Hit@10':>8}{'MRR':>7}"
        f"{'R@10/BM25':>11}{'MRR/BM25':>10}{'p50 ms':>8}{'p95 ms':>8}",
    ]
    for name, quality in results.items():
        m = quality.overall
        ratios = (f"{m.r10 / base.overall.r10:>11.2f}{m.mrr / base.overall.mrr:>10.2f}"
                  if base else f"{'':>21}")
        lines.append(f"{name:<16}{m.r5:>7.3f}{m.r10:>7.3f}{m.hit10:>8.3f}{m.mrr:>7.3f}"
                     f"{ratios}{quality.p50_ms:>8.2f}{quality.p95_ms:>8.2f}")
    categories = next(iter(results.values())).categories if results else {}
    lines.append("per category, R@5 / R@10 / MRR:")
    lines.append(f"{'':<16}" + "".join(
        f"{f'{c} ({m.questions})':>24}" for c, m in categories.items()))
    for name, quality in results.items():
        lines.append(f"{name:<16}" + "".join(
            f"{f'{m.r5:.3f} / {m.r10:.3f} / {m.mrr:.3f}':>24}"
            for m in quality.categories.values()))
    return "\n".join(lines)
