"""One process of the context benchmark (``bench.context_recall``): open a layer, fill it from a
JSONL export when given one, assemble the context of every task, print the results as JSON.

    python -P bench/context_worker.py LAYER PATH TASKS.json [EPISODES.jsonl]

LAYER is ``file``, ``graph`` (a folder of its own, with the embedder ``DUALMEM_EMBEDDER``
configures, if any) or ``auto`` (a home, where another process may hold the graph). It uses only
what every version of dualmem since the context issue has (``build_context``, ``Task``,
``Phase``, ``open_memory``, the layers' ``open``), so the same script measures today's code and
the code of an earlier commit put first on ``PYTHONPATH``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from backends.model import Episode
from backends.protocol import MemoryBackend, upsert_all
from memory import open_memory
from memory.context import Phase, Task, build_context

PROJECT = "payments"


@asynccontextmanager
async def _opened(layer: str, path: Path) -> AsyncIterator[MemoryBackend]:
    if layer == "auto":
        async with open_memory(path, "auto") as store:
            yield store
        return
    if layer == "file":
        from fallback import FileBackend

        opened: MemoryBackend = await FileBackend.open(path)
    else:
        from backends.graph import GraphBackend

        opened = await GraphBackend.open(path, embedder=_configured_embedder(path))
    try:
        yield opened
    finally:
        await opened.aclose()


def _configured_embedder(path: Path) -> Any:
    """The embedder ``DUALMEM_EMBEDDER`` configures (None: the built-in): asked for only when
    set, so that the earlier selections, run with their own code, need none of this."""
    if not os.environ.get("DUALMEM_EMBEDDER"):
        return None
    from memory.store.config import Config
    from memory.store.providers import embedder_for

    return embedder_for(Config.from_env(home=path))


async def run(layer: str, path: Path, tasks: list[dict[str, Any]],
              episodes: list[Episode]) -> dict[str, Any]:
    async with _opened(layer, path) as store:
        await upsert_all(store, episodes)
        results = []
        for spec in tasks:
            task = Task(id=spec["name"], **spec["task"])
            result = await build_context(store, task, project_id=PROJECT,
                                         phase=Phase(spec["phase"]))
            results.append({"name": spec["name"], "markdown": result.markdown,
                            "tokens_used": result.tokens_used, "budget": result.budget})
        return {"holds_graph": getattr(store, "holds_graph", None), "results": results}


def main() -> None:
    layer, path, tasks = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    lines = Path(sys.argv[4]).read_text(encoding="utf-8").splitlines() if len(sys.argv) > 4 else []
    episodes = [Episode.model_validate_json(line) for line in lines]
    found = asyncio.run(run(layer, path, json.loads(tasks.read_text()), episodes))
    print(json.dumps(found))


if __name__ == "__main__":
    main()
