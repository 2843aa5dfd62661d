"""A process of the multi-process tests: ``hold HOME OWN`` or ``write HOME NAME COUNT``.

hold:  opens HOME through ``auto`` (it must get the graph), writes OWN episodes, prints
       ``ready``, waits for a line on stdin (the writers are done) giving EXPECTED, waits until
       the graph itself holds EXPECTED episodes and nothing is pending, prints a JSON report
       and exits (releasing the graph).
write: opens HOME through ``auto`` (the graph is held elsewhere), writes COUNT episodes,
       prints a JSON report of the receipts.
loop:  ``loop HOME NAME``: opens HOME through ``auto`` without the graph, prints ``started``
       after its first write and writes in a tight loop until it holds the graph, then catches
       the graph up and prints a JSON report.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from pathlib import Path

import orjson

from backends.graph import GraphBackend
from backends.model import Episode
from memory.store.config import Config
from memory.store.dual import DualBackend
from memory.store.selection import open_memory

DEADLINE = 300.0  # a bound on waiting under load, not a timing claim


def episode(name: str, n: int) -> Episode:
    return Episode.create(
        group_id=f"proc-{name}", kind="note", name=f"{name} {n}", body=f"{name} wrote {n}",
        key=f"{name}-{n}",
    )


async def hold(home: Path, own: int) -> None:
    async with open_memory(home, "auto") as store:
        assert isinstance(store, DualBackend) and store.holds_graph, store
        for n in range(own):
            await store.upsert(episode("holder", n))
        print("ready", flush=True)
        expected = int(await asyncio.to_thread(sys.stdin.readline))
        started = time.monotonic()
        # A second handle on the same database in this process: it reads the graph itself.
        graph = await GraphBackend.open(Config(home=home).graph_dir)
        try:
            while time.monotonic() - started < DEADLINE:
                if await graph.count() == expected and (await store.status()).pending == 0:
                    break
                await asyncio.sleep(0.05)
            waited = time.monotonic() - started
            stored = [e async for e in graph.scan()]
        finally:
            await graph.aclose()
        status = await store.status()
        report = {
            "waited": waited,
            "count": len(stored),
            "distinct": len({e.id for e in stored}),
            "groups": dict(Counter(e.group_id for e in stored)),
            "status": status.to_json(),
        }
    print(orjson.dumps(report).decode(), flush=True)


async def write(home: Path, name: str, count: int) -> None:
    async with open_memory(home, "auto") as store:
        receipts = [await store.upsert(episode(name, n)) for n in range(count)]
        report = {
            "layers": dict(Counter(r.layer for r in receipts)),
            "pending": sum(r.pending for r in receipts),
        }
    print(orjson.dumps(report).decode(), flush=True)


async def loop(home: Path, name: str) -> None:
    async with open_memory(home, "auto") as store:
        assert isinstance(store, DualBackend) and not store.holds_graph, store
        written = 0
        started = time.monotonic()
        while not store.holds_graph and time.monotonic() - started < DEADLINE:
            await store.upsert(episode(name, written))
            written += 1
            if written == 1:
                print("started", flush=True)
                released = time.monotonic()
        took_over = store.holds_graph
        after = time.monotonic() - released
        await store.catch_up()
        report = {"written": written, "took_over": took_over, "after": after,
                  "pending": (await store.status()).pending}
    print(orjson.dumps(report).decode(), flush=True)


if __name__ == "__main__":
    mode, home = sys.argv[1], Path(sys.argv[2])
    if mode == "hold":
        asyncio.run(hold(home, int(sys.argv[3])))
    elif mode == "loop":
        asyncio.run(loop(home, sys.argv[3]))
    else:
        asyncio.run(write(home, sys.argv[3], int(sys.argv[4])))
