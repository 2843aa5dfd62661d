"""One process of the context benchmark (``bench.context_recall``): open a layer, fill it from a
JSONL export when given one, assemble the context of every task, print the results as JSON.

    python -P bench/context_worker.py LAYER PATH TASKS.json [EPISODES.jsonl]

LAYER is ``file``, ``graph`` (a folder of its own) or ``auto`` (a home, where another process
may hold the graph). It uses only what every version of dualmem since the context issue has
(``build_context``, ``Task``, ``Phase``, the layers' ``open``), so the same script measures
today's code and the code of an earlier commit put first on ``PYTHONPATH``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from backends.model import Episode
from backends.protocol import MemoryBackend, upsert_all
from memory.context import Phase, Task, build_context

PROJECT = "payments"


async def _open(layer: str, path: Path) -> MemoryBackend:
    if layer == "file":
        from fallback import FileBackend

        return await FileBackend.open(path)
    if layer == "graph":
        from backends.graph import GraphBackend

        return await GraphBackend.open(path)
    from memory.config import Config
    from memory.selection import open_backend

    store, _ = await open_backend(Config(home=path, backend="auto"))
    return store


async def run(layer: str, path: Path, tasks: list[dict[str, Any]],
              episodes: list[Episode]) -> dict[str, Any]:
    store = await _open(layer, path)
    try:
        await upsert_all(store, episodes)
        results = []
        for spec in tasks:
            task = Task(id=spec["name"], **spec["task"])
            result = await build_context(store, task, project_id=PROJECT,
                                         phase=Phase(spec["phase"]))
            results.append({"name": spec["name"], "markdown": result.markdown,
                            "tokens_used": result.tokens_used, "budget": result.budget})
        return {"holds_graph": getattr(store, "holds_graph", None), "results": results}
    finally:
        await store.aclose()


def main() -> None:
    layer, path, tasks = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    lines = Path(sys.argv[4]).read_text(encoding="utf-8").splitlines() if len(sys.argv) > 4 else []
    episodes = [Episode.model_validate_json(line) for line in lines]
    found = asyncio.run(run(layer, path, json.loads(tasks.read_text()), episodes))
    print(json.dumps(found))


if __name__ == "__main__":
    main()
