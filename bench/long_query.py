"""How long one search with a 10,000-character query takes in each layer (a figure, not a test:
``tests/contract/test_search.py`` checks only the answer).

    python -m bench.long_query
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from backends.graph import GraphBackend
from backends.model import Episode
from backends.protocol import MemoryBackend, upsert_all
from fallback import FileBackend

QUERY = ("database helm secrets " * 500)[:10_000]
REPEATS = 5


async def _measure(store: MemoryBackend) -> float:
    await upsert_all(store, [
        Episode.create(group_id="bench", kind="note", name=f"memory {n}",
                       body=f"database helm secrets topic{n % 37} module{n % 11}")
        for n in range(1000)
    ])
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        await store.search(QUERY)
        best = min(best, time.perf_counter() - started)
    return best


async def _run() -> None:
    with tempfile.TemporaryDirectory() as folder:
        for name, opener in (("file", FileBackend.open), ("graph", GraphBackend.open)):
            store: MemoryBackend = await opener(Path(folder) / name)
            try:
                seconds = await _measure(store)
            finally:
                await store.aclose()
            print(f"{name:>5} layer: a 10,000-character query over 1,000 episodes in "
                  f"{seconds * 1000:.1f} ms (best of {REPEATS})")


def main() -> None:
    asyncio.run(_run())


if __name__ == "__main__":
    main()
