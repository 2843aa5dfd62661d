"""LoCoMo dev on every layer in one run, beside plain BM25: the file layer, the graph layer, and
``auto`` as the process holding the graph and as another process answering from the journal
(a real subprocess, asked while this process holds the graph). Overall and multi-hop, R@10 and
MRR, with the tuning half (``locomo.TUNE``) and the held-out half apart.

    python -m bench.locomo_layers
"""

from __future__ import annotations

import time

from backends.protocol import MemoryBackend, upsert_all
from bench import locomo, other_process
from bench.locomo import TUNE


async def ask(store: MemoryBackend, data: locomo.LoCoMo
              ) -> tuple[dict[str, list[str]], list[float]]:
    rankings, latencies = {}, []
    for question in data.questions:
        started = time.perf_counter()
        hits = await store.search(question.text, group_ids=[question.group_id], limit=locomo.TOP)
        latencies.append(time.perf_counter() - started)
        rankings[question.qid] = [hit.episode.id for hit in hits]
    return rankings, latencies


def bm25_rankings(data: locomo.LoCoMo) -> tuple[dict[str, list[str]], list[float]]:
    from bench.bm25 import BM25

    groups = {item.group_id for item in data.items}
    indexes = {g: BM25((i.id, i.body) for i in data.items if i.group_id == g) for g in groups}
    rankings, latencies = {}, []
    for question in data.questions:
        started = time.perf_counter()
        rankings[question.qid] = [k for k, _ in indexes[question.group_id].search(
            question.text, locomo.TOP)]
        latencies.append(time.perf_counter() - started)
    return rankings, latencies


async def run() -> str:
    data = locomo.load()
    results = {"plain BM25": bm25_rankings(data)}

    async def fill_and_ask(store: MemoryBackend) -> tuple[dict[str, list[str]], list[float]]:
        await upsert_all(store, data.items)
        return await ask(store, data)

    results.update(await other_process.on_every_layer(
        "bench.locomo_layers", fill_and_ask, lambda answer: (answer[0], answer[1])))
    return table(data, results)


def table(data: locomo.LoCoMo, results: dict[str, tuple[dict[str, list[str]], list[float]]]
          ) -> str:
    halves = {"all": data.questions,
              "tune": [q for q in data.questions if q.group_id in TUNE],
              "held out": [q for q in data.questions if q.group_id not in TUNE]}
    lines = [f"LoCoMo dev: {len(data.items)} items, {len(data.questions)} questions, top "
             f"{locomo.TOP}; R@10 / MRR overall | multi-hop; tuned on {sorted(TUNE)}",
             f"{'retriever':<22}" + "".join(f"{h:>30}" for h in halves) + f"{'p95 ms':>9}"]
    for name, (rankings, latencies) in results.items():
        cells = []
        for questions in halves.values():
            quality = locomo.score(questions, rankings, latencies)
            hop = quality.categories["multi-hop"]
            cells.append(f"{quality.overall.r10:.3f} / {quality.overall.mrr:.3f} | "
                         f"{hop.r10:.3f} / {hop.mrr:.3f}")
        lines.append(f"{name:<22}" + "".join(f"{c:>30}" for c in cells)
                     + f"{locomo.percentiles(latencies)[1]:>9.2f}")
    return "\n".join(lines)


async def _ask_all(store: MemoryBackend) -> tuple[dict[str, list[str]], list[float]]:
    return await ask(store, locomo.load())


def main() -> None:
    other_process.main(run, _ask_all)


if __name__ == "__main__":
    main()
