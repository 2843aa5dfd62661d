"""Context assembly and graph-layer search latency at 10k memories: this tree against an
earlier commit, in one interleaved run.

    python -m bench.context_latency [COMMIT] [--size N] [--rounds R] [--runs N]

One graph folder is filled (``bench.context``'s corpus and filler, two recorded turns); then
each round runs a worker process (``bench/context_latency_worker.py``) for each code, the
baseline and this tree in turn, on that folder, so both see the same machine load. Reported
per code, wall and CPU (the worker's own, which other work on a shared machine inflates less),
p50 and p95: a context's assembly (bar: p95 <= 50 ms), each search a context makes (the
category passes ask for up to a few hundred hits), and plain searches (a task's description,
ten hits; bar: p95 <= 10 ms); with the load average before and after.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from backends.graph import GraphBackend
from bench.context import _populate
from bench.context_recall import extract

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "main"
BARS = {"context": 50.0, "plain searches": 10.0}


def _option(args: list[str], name: str, default: int) -> int:
    if name in args:
        at = args.index(name)
        value = int(args[at + 1])
        del args[at : at + 2]
        return value
    return default


def _round(code: Path, folder: Path, runs: int) -> dict[str, Any]:
    script = ROOT / "bench" / "context_latency_worker.py"
    done = subprocess.run([sys.executable, "-P", str(script), str(folder), str(runs)],
                          env={**os.environ, "PYTHONPATH": str(code)}, capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"worker failed:\n{done.stderr[-3000:]}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _p(values: Sequence[float]) -> str:
    ms = sorted(values)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return f"p50 {statistics.median(ms):6.1f}  p95 {p95:6.1f}"


def report(results: Mapping[str, list[dict[str, Any]]]) -> None:
    for measure in ("context", "context searches", "plain searches"):
        bar = BARS.get(measure)
        print(f"{measure}" + (f" (bar: p95 <= {bar:.0f} ms)" if bar else "") + ", ms")
        for code, rounds in results.items():
            wall = [x for r in rounds for x in r[measure]["wall"]]
            cpu = [x for r in rounds for x in r[measure]["cpu"]]
            print(f"  {code:<16} wall {_p(wall)}   CPU {_p(cpu)}   n={len(wall)}")
    for code, rounds in results.items():
        print(f"  {code}: contexts over budget {sum(r['over'] for r in rounds)}")


async def _fill(folder: Path, size: int) -> None:
    store = await GraphBackend.open(folder)
    try:
        await _populate(store, size)
    finally:
        await store.aclose()


def main() -> None:
    args = sys.argv[1:] if __name__ == "__main__" else []
    size = _option(args, "--size", 10_000)
    rounds = _option(args, "--rounds", 4)
    runs = _option(args, "--runs", 80)
    commit = args[0] if args else BASELINE
    with tempfile.TemporaryDirectory(prefix="dualmem-bench-") as tmp:
        folder = Path(tmp) / "graph"
        asyncio.run(_fill(folder, size))
        label = f"{commit} ({_short(commit)})"
        codes = {label: extract(commit, Path(tmp) / "baseline"), "ours": ROOT}
        print(f"context latency, graph layer, {size} memories, {rounds} rounds of {runs} "
              f"contexts per code, interleaved; load average {_load()}")
        results: dict[str, list[dict[str, Any]]] = {code: [] for code in codes}
        for _ in range(rounds):
            for code, path in codes.items():
                results[code].append(_round(path, folder, runs))
        print(f"load average after: {_load()}")
    report(results)


def _short(commit: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", commit],
                          capture_output=True, text=True, check=True).stdout.strip()


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
