"""The graph holder's write latency as the history of rewrites grows: each rewrite of a memory
retires the facts it no longer states, and the holder keeps them in ``history.jsonl`` after
every catch-up that wrote (``DualBackend._save_history``).

    python -P -m bench.history_writes [--before COMMIT] [MEMORIES ...]   (default: 300 1000)

For each size, a fresh ``auto`` home is filled with MEMORIES gotchas naming three entities each,
and each is rewritten once (two facts retired per memory); then ROUNDS rewrites of one memory
each are timed, upsert and catch-up together. With ``--before``, that commit's tree (from git)
is measured in the same run, before this tree at each size, each in a process of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.context_recall import extract

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 40

_CHILD = """
import asyncio, json, sys, tempfile, time
from pathlib import Path
from backends.model import Episode
from memory import open_memory

def gotcha(n, version):
    return Episode.create(group_id="bench", kind="gotcha", key=f"k{n}", name=f"gotcha {n}",
                          body=f"app/mod{n}.py imports app/dep{n}_{version}.py and breaks "
                               f"`Thing{n}V{version}`")

async def main(size, rounds):
    with tempfile.TemporaryDirectory() as tmp:
        async with open_memory(Path(tmp) / "home", "auto") as store:
            for version in range(2):
                for start in range(0, size, 500):
                    await store.upsert_many([gotcha(n, version)
                                             for n in range(start, min(size, start + 500))])
                    await store.catch_up()
            retired = len(await store.retired_facts())
            spent = []
            for n in range(rounds):
                started = time.perf_counter()
                await store.upsert(gotcha(n, 2 + n))
                await store.catch_up()
                spent.append((time.perf_counter() - started) * 1000)
    print(json.dumps({"retired": retired, "ms": spent}))

asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
"""


def measure(code: Path, size: int) -> tuple[int, list[float]]:
    """The retired facts held, and each timed rewrite's milliseconds."""
    env = {**os.environ, "PYTHONPATH": str(code), "GRAPHITI_TELEMETRY_ENABLED": "false"}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(size), str(ROUNDS)], env=env,
                          cwd=code, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the child on {code} failed:\n{done.stderr[-2000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return int(found["retired"]), [float(ms) for ms in found["ms"]]


def row(label: str, retired: int, spent: list[float]) -> str:
    spent = sorted(spent)
    return (f"  {label:<18} retired facts {retired:>6}   rewrite + catch-up median "
            f"{statistics.median(spent):6.1f} ms   p90 {spent[int(0.9 * len(spent))]:6.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.history_writes")
    parser.add_argument("--before", help="a commit to measure beside this tree")
    parser.add_argument("sizes", nargs="*", type=int, default=[300, 1000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        codes = {"ours": ROOT}
        if args.before:
            codes = {f"before ({args.before[:7]})": extract(args.before, Path(tmp)), **codes}
        for size in args.sizes:
            print(f"{size} memories, each rewritten once; {ROUNDS} rewrites timed")
            for label, code in codes.items():
                print(row(label, *measure(code, size)), flush=True)


if __name__ == "__main__":
    main()
