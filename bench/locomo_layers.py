"""LoCoMo dev on every layer in one run, beside plain BM25: the file layer, the graph layer, and
``auto`` as the process holding the graph and as another process answering from the journal
(a real subprocess, asked while this process holds the graph). Overall and multi-hop, R@10 and
MRR, with the tuning half (``bench.locomo_reach.TUNE``) and the held-out half apart.

    python -m bench.locomo_layers
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from backends.protocol import MemoryBackend, upsert_all
from bench import locomo
from bench.locomo_reach import TUNE


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
    from backends.graph import GraphBackend
    from fallback import FileBackend
    from memory import open_memory

    data = locomo.load()
    results = {"plain BM25": bm25_rankings(data)}
    with tempfile.TemporaryDirectory() as scratch:
        files = await FileBackend.open(Path(scratch) / "files", watch=False)
        try:
            await upsert_all(files, data.items)
            results["file layer"] = await ask(files, data)
        finally:
            await files.aclose()
        graph = await GraphBackend.open(Path(scratch) / "graph")
        try:
            await upsert_all(graph, data.items)
            results["graph layer"] = await ask(graph, data)
        finally:
            await graph.aclose()
        home = Path(scratch) / "home"
        async with open_memory(home, "auto") as store:
            if not getattr(store, "holds_graph", False):
                raise RuntimeError("auto did not take the graph in an empty home")
            await upsert_all(store, data.items)
            results["auto, graph holder"] = await ask(store, data)
            results["auto, other process"] = await asyncio.to_thread(_other_process, home)
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


def _other_process(home: Path) -> tuple[dict[str, list[str]], list[float]]:
    env = dict(os.environ, GRAPHITI_TELEMETRY_ENABLED="false")
    done = subprocess.run([sys.executable, "-m", "bench.locomo_layers", "--other-process",
                           str(home)], capture_output=True, check=True, env=env,
                          cwd=Path(__file__).resolve().parents[1])
    answer = orjson.loads(done.stdout)
    return answer["rankings"], answer["latencies"]


async def _answer_as_other_process(home: Path) -> None:
    from memory import open_memory

    async with open_memory(home, "auto") as store:
        if getattr(store, "holds_graph", True):
            raise RuntimeError("the other process took the graph: it was meant to be held")
        rankings, latencies = await ask(store, locomo.load())
    sys.stdout.buffer.write(orjson.dumps({"rankings": rankings, "latencies": latencies}))


def main() -> None:
    if sys.argv[1:2] == ["--other-process"]:
        asyncio.run(_answer_as_other_process(Path(sys.argv[2])))
    else:
        print(asyncio.run(run()))


if __name__ == "__main__":
    main()
