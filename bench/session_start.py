"""Session start: the whole ``dualmem hook session-start`` process (Claude Code's SessionStart
JSON on stdin) on the file layer, beside ``python -c pass`` measured in the same rounds.

    python -m bench.session_start [--before TREE ...] [SIZE]
                                    (default: 10000; DUALMEM_BENCH_RUNS=10)

A home of SIZE synthetic episodes (``bench.cli_latency.project_home``). Each
command runs RUNS times round-robin after one warm-up round (which writes the bytecode and
builds any derived index). Reported: wall time, and CPU time (user + system) of the process,
p50 and p95 in ms: on a loaded machine the wall time is mostly waiting for a core.

``--before TREE`` (repeatable) runs the same hook with another checkout of dualmem first on
``PYTHONPATH``, in the same rounds, labelled with its folder's name.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import orjson

from bench.cli_latency import Command, _dualmem, project_home, rounds
from bench.locomo import percentiles


def main(size: int = 10000, before: Sequence[Path] = ()) -> None:
    runs = int(os.environ.get("DUALMEM_BENCH_RUNS", "10"))
    with tempfile.TemporaryDirectory(prefix="dualmem-bench-start-") as scratch:
        folder = Path(scratch)
        project_home(folder, size)
        start = orjson.dumps({"session_id": "bench", "cwd": str(folder),
                              "transcript_path": str(folder / "t.jsonl"),
                              "hook_event_name": "SessionStart", "source": "startup"})
        hook = Command("dualmem hook session-start (file)",
                       _dualmem("--backend", "file", "hook", "session-start"), start)
        commands = [Command("python -c pass (baseline)", [sys.executable, "-c", "pass"]),
                    hook, *(hook.before(tree) for tree in before)]
        times = rounds(lambda _: commands, folder, runs)
    print(f"session-start bench, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} "
          f"cpu(s), {runs} runs each; wall and CPU time of the whole process, ms")
    print(f"\n{size:,} episodes\n  {'command':<52}{'p50':>8}{'p95':>8}{'cpu p50':>9}"
          f"{'cpu p95':>9}")
    for label, taken in times.items():
        wall = percentiles([w for w, _ in taken])
        cpu = percentiles([c for _, c in taken])
        print(f"  {label:<52}{wall[0]:>8.0f}{wall[1]:>8.0f}{cpu[0]:>9.0f}{cpu[1]:>9.0f}")
    print(f"  (load average {' '.join(f'{n:.1f}' for n in os.getloadavg())})")


if __name__ == "__main__":
    line = argparse.ArgumentParser(prog="python -m bench.session_start")
    line.add_argument("--before", type=Path, metavar="TREE", action="append", default=[],
                      help="another checkout of dualmem, measured in the same rounds "
                      "(repeatable)")
    line.add_argument("size", type=int, nargs="?", default=10000, metavar="SIZE")
    parsed = line.parse_args()
    main(parsed.size, parsed.before)
