"""One round of ``bench.context_latency``: open a graph folder filled by the bench, assemble the
contexts of ``bench.context.TASKS`` and time each assembly and each search it makes, then time
plain searches (each task's description, ten hits of the project's group); print JSON.

    python -P bench/context_latency_worker.py FOLDER RUNS

It uses only what every version of dualmem since the context issue has (``build_context``,
``GraphBackend.open``, ``bench.context``'s tasks and timing loop), so the same script measures
the code of an earlier commit put first on ``PYTHONPATH``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from backends.graph import GraphBackend
from backends.model import Hit
from bench.context import TASKS, _latencies
from memory.agent.scopes import project_group
from memory.context import build_context
from tests.context_corpus import PROJECT


class Timed:
    """Wall and CPU milliseconds of every search of a store (CPU: this process's)."""

    def __init__(self, store: GraphBackend) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self._search = store.search

    async def search(self, query: str, *, group_ids: Sequence[str] | None = None,
                     kinds: Sequence[str] | None = None, limit: int = 10) -> list[Hit]:
        started, used = time.perf_counter(), time.process_time()
        found = await self._search(query, group_ids=group_ids, kinds=kinds, limit=limit)
        self.wall.append((time.perf_counter() - started) * 1000)
        self.cpu.append((time.process_time() - used) * 1000)
        return found


async def run(folder: Path, runs: int) -> dict[str, Any]:
    store = await GraphBackend.open(folder)
    try:
        timed = Timed(store)
        store.search = timed.search  # type: ignore[method-assign]
        for task, phase in TASKS:  # warm-up: the first searches load the index's vectors
            await build_context(store, task, phase=phase, project_id=PROJECT)
        timed.wall.clear()
        timed.cpu.clear()
        wall, cpu, over = await _latencies(store, runs)
        context_searches = {"wall": timed.wall, "cpu": timed.cpu}
        timed.wall, timed.cpu = [], []
        for n in range(runs):
            task, _ = TASKS[n % len(TASKS)]
            await timed.search(task.description, group_ids=[project_group(PROJECT)], limit=10)
        return {"context": {"wall": wall, "cpu": cpu}, "over": over,
                "context searches": context_searches,
                "plain searches": {"wall": timed.wall, "cpu": timed.cpu}}
    finally:
        await store.aclose()


def main() -> None:
    print(json.dumps(asyncio.run(run(Path(sys.argv[1]), int(sys.argv[2])))))


if __name__ == "__main__":
    main()
