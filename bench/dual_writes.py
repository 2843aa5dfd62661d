"""Write rate through ``auto`` (the dual store), beside each layer alone, in the same run.

    python -m bench.dual_writes [TOTAL] [WRITERS ...] [--before CHECKOUT]
        (default: 400 1 4 8)

- each layer alone: one process upserting ``TOTAL`` episodes one at a time;
- ``auto`` as the graph's holder: the same, through the dual store;
- ``auto`` with the graph held by another process: 1, 4 and 8 writer processes at once, sharing
  ``TOTAL`` upserts (so every row writes the same episodes); the rate is all their writes over
  the slowest one's time, and the CPU time every process (holder included) spent per write.

With ``--before``, the rows with writers are measured for that checkout too (another worktree,
an older commit), alternating with this one so that both meet the same load: the children run
on that checkout's code, and use only ``open_memory`` and ``Episode``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from backends.model import Episode
from memory import open_memory

HERE = Path(__file__).resolve().parents[1]

_WRITER = """
import asyncio, sys, time
from backends.model import Episode
from memory import open_memory
async def main(home, name, count):
    async with open_memory(home, "auto") as store:
        print("open", flush=True)
        sys.stdin.readline()
        started = time.perf_counter()
        for n in range(count):
            await store.upsert(Episode.create(group_id="bench", kind="note", key=f"{name}-{n}",
                name=f"{name} {n}", body=f"writer {name} stored note number {n} " * 6))
        print(time.perf_counter() - started, flush=True)
        sys.stdin.readline()  # stay until measured
asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""
_HOLDER = """
import asyncio, sys
from memory import open_memory
async def main(home):
    async with open_memory(home, "auto") as store:
        print("holding" if getattr(store, "holds_graph", False) else "not holding", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
asyncio.run(main(sys.argv[1]))
"""


@dataclass(frozen=True)
class Run:
    rate: float
    """episodes per second, all writers together"""
    cpu_ms: float
    """CPU milliseconds per write, every process (holder included), while writing"""


async def alone(home: Path, backend: str, count: int) -> float:
    async with open_memory(home, backend) as store:
        started = time.perf_counter()
        for n in range(count):
            await store.upsert(Episode.create(group_id="bench", kind="note", key=str(n),
                                              name=f"note {n}", body=f"stored note {n} " * 6))
        return count / (time.perf_counter() - started)


def _start(code: str, checkout: Path, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(checkout), GRAPHITI_TELEMETRY_ENABLED="false")
    # In the checkout: ``python -c`` puts its working folder first on the path.
    return subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env, cwd=checkout)


def _say(child: subprocess.Popen[str], line: str = "go") -> None:
    assert child.stdin is not None
    child.stdin.write(line + "\n")
    child.stdin.flush()


def _hear(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    return child.stdout.readline().strip()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def writers(checkout: Path, processes: int, total: int) -> Run:
    """``processes`` writers through ``auto`` on a home whose graph another process holds,
    started together, ``total`` writes between them."""
    count = total // processes
    with tempfile.TemporaryDirectory() as tmp:
        home = str(Path(tmp) / "home")
        children = [holder := _start(_HOLDER, checkout, home)]
        try:
            assert _hear(holder) == "holding"
            children += [_start(_WRITER, checkout, home, f"w{n}", str(count))
                         for n in range(processes)]
            for child in children[1:]:
                assert _hear(child) == "open"
            before = sum(_cpu_seconds(child.pid) for child in children)
            for child in children[1:]:
                _say(child)
            seconds = [float(_hear(child)) for child in children[1:]]
            spent = sum(_cpu_seconds(child.pid) for child in children) - before
            for child in children:
                _say(child, "stop")
            for child in children:
                child.wait(timeout=600)
        finally:
            for child in children:
                child.kill()
                child.wait()
    written = processes * count
    return Run(written / max(seconds), 1000 * spent / written)


def main(arguments: Sequence[str] = ()) -> None:
    args = list(arguments)
    checkouts = [("this checkout", HERE)]
    if "--before" in args:
        at = args.index("--before")
        checkouts.append(("before", Path(args[at + 1]).resolve()))
        del args[at : at + 2]
    total = int(args[0]) if args else 400
    counts = [int(a) for a in args[1:]] or [1, 4, 8]
    print(f"write rate, {total} upserts, one at a time (episodes/s)")
    with tempfile.TemporaryDirectory() as tmp:
        for backend in ("file", "graph", "auto"):
            rate = asyncio.run(alone(Path(tmp) / backend, backend, total))
            label = "auto, this process holds the graph" if backend == "auto" else backend
            print(f"  {label:<44} {rate:10.1f}")
    print("auto, graph held by another process: episodes/s, CPU ms per write (all processes)")
    print(f"  {'writers':<10}" + "".join(f"{name:>26}" for name, _ in checkouts))
    for processes in counts:
        runs = [writers(checkout, processes, total) for _, checkout in checkouts]
        print(f"  {processes:<10}" + "".join(f"{r.rate:>14.1f}/s {r.cpu_ms:>6.1f} ms"
                                             for r in runs))


if __name__ == "__main__":
    main(sys.argv[1:])
