"""One of the many writers: ``writer_child.py HOME URL NAME COUNT`` opens HOME through ``auto``
with its graph on the FalkorDB server at URL, writes COUNT memories one call each, and prints a
JSON report of the receipts (how many went where, how many were pending)."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter

import orjson

from backends.model import Episode
from memory.store.selection import open_memory


async def main(home: str, url: str, name: str, count: int) -> None:
    layers: Counter[str] = Counter()
    pending = 0
    async with open_memory(home, "auto", graph_url=url) as store:
        for n in range(count):
            receipt = await store.upsert(Episode.create(
                group_id="team", kind="note", name=f"{name} {n}", key=f"{name}-{n}",
                body=f"{name} wrote note {n} about the parser"))
            layers[receipt.layer] += 1
            pending += receipt.pending
    print(orjson.dumps({"layers": layers, "pending": pending}).decode())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
