"""Naming a memory by a prefix of its id (``memory.curation.ids.resolve``) in a long-running
process: the dual store with its graph on embedded Kùzu, held and caught up, CPU time per call.

    python -m bench.resolve_ids [--before TREE ...] [SIZE]
                                  (default: 10000; DUALMEM_BENCH_RUNS=3)

A home of SIZE synthetic episodes (``bench.file_layer.synthetic``) under random uuids, as
memories without a key have, its graph built once.
A worker process per tree (this one, then each ``--before`` checkout of dualmem first on
``PYTHONPATH``, round-robin for RUNS rounds) opens the store and resolves CALLS ids, each by its
shortest unique prefix, asking for every group and for the id's group; then the same ids by
``ids_starting`` alone; and, for scale, one scan of the group (what a call cost by a scan).
Reported: CPU time (user + system, every thread of the worker) per call, µs, median of the
rounds; and the load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import orjson

CALLS = 300
SEED = 7
CASES = ("every group", "one group")
SHOWN = (*CASES, *(f"{case}: ids_starting" for case in CASES), "one scan of the group")
WORKER = Path(__file__).resolve()


def main(size: int = 10000, before: Sequence[Path] = ()) -> None:
    from bench.cli_latency import REPO, _env

    runs = int(os.environ.get("DUALMEM_BENCH_RUNS", "3"))
    trees = [REPO, *before]
    with tempfile.TemporaryDirectory(prefix="dualmem-bench-ids-") as scratch:
        home = Path(scratch) / ".dualmem"
        _lay_down(home, size)
        worker(home, build=True)  # the graph, caught up with the journal, once
        taken: dict[Path, list[dict[str, float]]] = {tree: [] for tree in trees}
        for _ in range(runs):
            for tree in trees:
                # A script (an older tree has no bench/resolve_ids.py); -P: bench/ off the path.
                done = subprocess.run([sys.executable, "-P", str(WORKER), "--worker", str(home)],
                                      env=_env(tree), capture_output=True)
                if done.returncode:
                    raise SystemExit(f"worker failed ({tree}): {done.stderr.decode()[-2000:]}")
                taken[tree].append(orjson.loads(done.stdout.splitlines()[-1]))
    print(f"resolve bench, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cpu(s), "
          f"{size:,} episodes, {CALLS} calls x {runs} rounds; CPU µs per call, median of rounds")
    for case in SHOWN:
        print(f"  {case:<34}" + "".join(
            f"{tree.name:>14} {statistics.median(r[case] for r in rounds):>8.0f}"
            for tree, rounds in taken.items()))
    print(f"  (load average {' '.join(f'{n:.1f}' for n in os.getloadavg())})")


def _lay_down(home: Path, size: int) -> None:
    from bench.file_layer import synthetic
    from bench.migrate import lay_down

    draw = random.Random(SEED)
    lay_down(home / "files", [episode.model_copy(update={
        "id": str(uuid.UUID(int=draw.getrandbits(128), version=4))}) for episode in
        synthetic(size)])


def worker(home: Path, *, build: bool = False) -> None:
    asyncio.run(_resolve_all(home, build))


async def _resolve_all(home: Path, build: bool) -> None:
    from memory.curation.ids import resolve
    from memory.store.config import Config
    from memory.store.dual import open_dual

    store = await open_dual(Config(home))
    try:
        await store.catch_up()
        assert store.holds_graph, "the graph is not held"
        if build:
            return
        groups = {episode.id: episode.group_id async for episode in store.scan()}
        picked = _unique_prefixes(sorted(groups))[:: max(1, len(groups) // CALLS)][:CALLS]
        project = groups[picked[0][0]]
        per_call = {}
        for case, asked in zip(CASES, (None, [project]), strict=True):
            wanted = [(key, prefix) for key, prefix in picked
                      if asked is None or groups[key] in asked]
            start = time.process_time()
            for key, prefix in wanted:
                assert await resolve(store, prefix, group_ids=asked) == key
            per_call[case] = (time.process_time() - start) / len(wanted) * 1e6
            start = time.process_time()
            for key, prefix in wanted:
                assert await store.ids_starting(prefix, group_ids=asked) == [key]
            per_call[f"{case}: ids_starting"] = (time.process_time() - start) / len(
                wanted) * 1e6
        start = time.process_time()  # what each call would cost by a scan
        assert len([e.id async for e in store.scan(group_ids=[project])]) > 0
        per_call["one scan of the group"] = (time.process_time() - start) * 1e6
        print(orjson.dumps(per_call).decode())
    finally:
        await store.aclose()


def _unique_prefixes(ids: list[str]) -> list[tuple[str, str]]:
    """(id, its shortest prefix no other id starts with) of the sorted ``ids``, but for ids
    that are a prefix of another, and shorter than the id (else ``get`` answers alone)."""
    def shared(a: str, b: str) -> int:
        return next((n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                    min(len(a), len(b)))

    found = []
    for n, key in enumerate(ids):
        around = [ids[m] for m in (n - 1, n + 1) if 0 <= m < len(ids)]
        length = max((shared(key, other) for other in around), default=0) + 1
        if length < len(key):
            found.append((key, key[:length]))
    return found


if __name__ == "__main__":
    line = argparse.ArgumentParser(prog="python -m bench.resolve_ids")
    line.add_argument("--before", type=Path, metavar="TREE", action="append", default=[],
                      help="another checkout of dualmem, measured in the same rounds "
                      "(repeatable)")
    line.add_argument("--worker", type=Path, metavar="HOME", help=argparse.SUPPRESS)
    line.add_argument("size", type=int, nargs="?", default=10000, metavar="SIZE")
    parsed = line.parse_args()
    if parsed.worker is not None:
        worker(parsed.worker)
    else:
        main(parsed.size, parsed.before)
