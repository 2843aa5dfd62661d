"""Write rate through ``auto`` (the dual store), beside each layer alone, in the same run.

    python -m bench.dual_writes [COUNT] [WRITERS ...]      (default: 300 1 4 8)

- each layer alone: one process upserting ``COUNT`` episodes one at a time;
- ``auto`` as the graph's holder: the same, through the dual store;
- ``auto`` with the graph held by another process: 1, 4 and 8 writer processes at once, each
  upserting ``COUNT`` episodes; the rate is all their writes over the slowest one's time.

Only ``open_memory`` and ``Episode`` are used, so the same file measures an older checkout
(run it with that checkout first on ``PYTHONPATH``) for a before/after in one sitting.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from backends.model import Episode
from memory.store.selection import open_memory

_WRITER = """
import asyncio, sys, time
from backends.model import Episode
from memory.store.selection import open_memory
async def main(home, name, count):
    async with open_memory(home, sys.argv[4]) as store:
        print("open", flush=True)
        sys.stdin.readline()
        started = time.perf_counter()
        for n in range(count):
            await store.upsert(Episode.create(group_id="bench", kind="note", key=f"{name}-{n}",
                name=f"{name} {n}", body=f"writer {name} stored note number {n} " * 6))
        print(time.perf_counter() - started, flush=True)
asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""
_HOLDER = """
import asyncio, sys
from memory.store.selection import open_memory
async def main(home):
    async with open_memory(home, "auto") as store:
        print("holding" if getattr(store, "holds_graph", False) else "not holding", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
asyncio.run(main(sys.argv[1]))
"""


async def alone(home: Path, backend: str, count: int) -> float:
    async with open_memory(home, backend) as store:
        started = time.perf_counter()
        for n in range(count):
            await store.upsert(Episode.create(group_id="bench", kind="note", key=str(n),
                                              name=f"note {n}", body=f"stored note {n} " * 6))
        return count / (time.perf_counter() - started)


def writers(home: Path, processes: int, count: int) -> float:
    """Episodes per second of ``processes`` writers through ``auto``, started together."""
    command = [sys.executable, "-c", _WRITER, str(home)]
    children = [subprocess.Popen([*command, f"{processes}w{n}", str(count), "auto"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                for n in range(processes)]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "open"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        seconds = [float(child.communicate(timeout=900)[0]) for child in children]
    finally:
        for child in children:
            child.kill()
            child.wait()
    return processes * count / max(seconds)


def main(arguments: Sequence[str] = ()) -> None:
    count = int(arguments[0]) if arguments else 300
    counts = [int(a) for a in arguments[1:]] or [1, 4, 8]
    print(f"write rate, {count} upserts per writer, one at a time (episodes/s)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for backend in ("file", "graph", "auto"):
            rate = asyncio.run(alone(root / backend, backend, count))
            label = "auto, this process holds the graph" if backend == "auto" else backend
            print(f"  {label:<44} {rate:10.1f}")
        home = root / "held"
        with subprocess.Popen([sys.executable, "-c", _HOLDER, str(home)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) as holder:
            assert holder.stdout is not None and holder.stdin is not None
            assert holder.stdout.readline().strip() == "holding"
            for processes in counts:
                rate = writers(home, processes, count)
                print(f"  {f'auto, graph held elsewhere, {processes} writer(s)':<44} {rate:10.1f}")
            holder.stdin.write("stop\n")
            holder.stdin.flush()
            holder.wait(timeout=600)


if __name__ == "__main__":
    main(sys.argv[1:])
