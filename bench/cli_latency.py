"""End to end: the time of a whole ``dualmem`` process, as a hook or a script pays it, beside
``python -c pass`` measured in the same run.

    python -m bench.cli_latency [--before TREE] [SIZE ...]
                                    (default: 1000 10000; DUALMEM_BENCH_RUNS=20)

For each size, a home of SIZE synthetic episodes (``bench.file_layer.synthetic``; every other
one in the project's group), replayed into the graph for ``auto``. Every command runs RUNS
times, round-robin with the baseline so that all see the same machine load, after one warm-up
each (which builds any derived index). Measured: ``dualmem search`` and ``dualmem hook prompt``
(Claude Code's JSON on stdin) on the file layer, on ``auto`` with the graph free, and on
``auto`` while a ``dualmem mcp`` server holds the graph (as in a Claude Code session): wall
time, and the CPU time of the process (on a loaded machine, the wall time is mostly waiting for
a core), with the load average after each table.
Target (issue 11): p95 <= 250 ms at 10k.

``--before TREE`` (repeatable) runs each command again with another checkout of dualmem (e.g.
a worktree of main) first on ``PYTHONPATH``, in the same rounds: a change's before and after,
measured under one machine load; each labelled with the folder's name. All must read the same
index layout (``textindex.VERSION``), or each would rebuild the others'.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

from bench.file_layer import synthetic
from bench.locomo import percentiles
from bench.migrate import lay_down
from memory.store.project import ensure_project_id

TARGET_MS = 250.0
REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Command:
    label: str
    argv: list[str]
    stdin: bytes = b""
    tree: Path = REPO  # the checkout of dualmem that runs it

    def before(self, tree: Path) -> Command:
        return Command(f"{self.label} [{tree.name}]", self.argv, self.stdin, tree)


def project_home(folder: Path, size: int) -> tuple[Path, list[str]]:
    """``folder/.dualmem`` holding ``size`` episodes, half in the project's group; and queries:
    three words of project episodes, one per run."""
    home = folder / ".dualmem"
    project, _ = ensure_project_id(home / "project.json", "bench")
    episodes = [
        e.model_copy(update={"group_id": project}) if n % 2 == 0 else e
        for n, e in enumerate(synthetic(size))
    ]
    lay_down(home / "files", episodes)
    words = [e.body.split() for e in episodes[::2]]
    return home, [" ".join(w[n % 20 : n % 20 + 3]) for n, w in enumerate(words)]


def _env(tree: Path = REPO) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
    # Bytecode as an installed dualmem has it: the warm-up round writes it.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DUALMEM_") and k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPATH": path}


def _dualmem(*argv: str) -> list[str]:
    return [sys.executable, "-m", "memory", *argv]


def commands(folder: Path, backend: str, query: str) -> list[Command]:
    prompt = orjson.dumps({
        "session_id": "bench", "transcript_path": str(folder / "t.jsonl"), "cwd": str(folder),
        "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
        "prompt": f"How do we handle {query}?",
    })
    flag = ["--backend", backend]
    return [
        Command(f"dualmem search ({backend})", _dualmem(*flag, "search", query, "--limit", "5")),
        Command(f"dualmem hook prompt ({backend})", _dualmem(*flag, "hook", "prompt"), prompt),
    ]


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _timed(command: Command, cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one run. On a loaded machine the wall time is mostly waiting
    for a core: the CPU time is what the process itself costs."""
    cpu, started = _cpu(), time.perf_counter()
    done = subprocess.run(command.argv, input=command.stdin, cwd=cwd, env=_env(command.tree),
                          capture_output=True, check=False)
    seconds, cpu = time.perf_counter() - started, _cpu() - cpu
    if done.returncode != 0 or done.stderr:  # a hook exits 0 even when it fails
        raise RuntimeError(f"{command.label} failed: {done.stderr.decode()[-500:]}")
    return seconds, cpu


def measure(
    folder: Path, queries: Sequence[str], backend: str, runs: int, before: Sequence[Path] = ()
) -> dict[str, list[tuple[float, float]]]:
    baseline = Command("python -c pass (baseline)", [sys.executable, "-c", "pass"])
    imports = Command("python -c 'import memory'", [sys.executable, "-c", "import memory"])
    def round_of(run: int) -> list[Command]:
        measured = [imports, *commands(folder, backend, queries[run])]
        return [baseline, *measured,
                *(command.before(tree) for tree in before for command in measured)]

    return rounds(round_of, folder, runs)


def rounds(round_of: Callable[[int], Sequence[Command]], folder: Path, runs: int
           ) -> dict[str, list[tuple[float, float]]]:
    """label -> (wall, CPU) ms of each command of ``round_of(run)``, round-robin so that all
    see the same machine load, after one warm-up round (which builds any derived index)."""
    times: dict[str, list[tuple[float, float]]] = {}
    for run in range(runs + 1):
        for command in round_of(run):
            timed = _timed(command, folder)
            if run:  # the first round warms up
                times.setdefault(command.label, []).append(timed)
    return times


@contextmanager
def graph_held(home: Path) -> Iterator[None]:
    """A ``dualmem mcp`` server on ``home`` (holding the graph) for the duration."""
    server = subprocess.Popen(_dualmem("--home", str(home), "mcp"), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env=_env())
    assert server.stdin is not None and server.stdout is not None
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}}
    server.stdin.write(orjson.dumps(hello) + b"\n")
    server.stdin.flush()
    server.stdout.readline()  # answered: the store is open
    try:
        yield
    finally:
        server.communicate(timeout=120)


def report(times: dict[str, list[tuple[float, float]]], note: str) -> None:
    base = "python -c pass (baseline)"
    base_p50 = percentiles([wall for wall, _ in times[base]])[0]
    for label, timed in times.items():
        p50, p95 = percentiles([wall for wall, _ in timed])
        cpu_p50, cpu_p95 = percentiles([cpu for _, cpu in timed])
        verdict = "" if label.startswith("python") else (
            "  ok" if p95 <= TARGET_MS else "  over target")
        print(f"  {label + note:<47}{p50:>8.0f}{p95:>8.0f}{p50 - base_p50:>+10.0f}"
              f"{cpu_p50:>9.0f}{cpu_p95:>9.0f}{verdict}")
    print(f"  (load average {' '.join(f'{n:.1f}' for n in os.getloadavg())})")


def main(sizes: Sequence[int] = (1000, 10000), before: Sequence[Path] = ()) -> None:
    runs = int(os.environ.get("DUALMEM_BENCH_RUNS", "20"))
    print(f"cli latency bench, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cpu(s), "
          f"{runs} runs each; wall and CPU time of the whole process, ms")
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="dualmem-bench-cli-") as scratch:
            folder = Path(scratch)
            home, queries = project_home(folder, size)
            print(f"\n{size:,} episodes ({(size + 1) // 2:,} in the project's group)")
            print(f"  {'command':<47}{'p50':>8}{'p95':>8}{'p50-base':>10}{'cpu p50':>9}"
                  f"{'cpu p95':>9}")
            report(measure(folder, queries, "file", runs, before), "")
            migrated = subprocess.run(_dualmem("--home", str(home), "migrate"), cwd=folder,
                                      env=_env(), capture_output=True, check=False)
            if migrated.returncode != 0:
                raise RuntimeError(migrated.stderr.decode())
            report(measure(folder, queries, "auto", runs, before), ", graph free")
            with graph_held(home):
                report(measure(folder, queries, "auto", runs, before), ", graph held")


if __name__ == "__main__":
    line = argparse.ArgumentParser(prog="python -m bench.cli_latency")
    line.add_argument("--before", type=Path, metavar="TREE", action="append", default=[],
                      help="another checkout of dualmem, measured in the same rounds "
                      "(repeatable)")
    line.add_argument("sizes", type=int, nargs="*", default=[1000, 10000], metavar="SIZE")
    parsed = line.parse_args()
    main(parsed.sizes, parsed.before)
