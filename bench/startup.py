"""Start-up: what a home's first commands cost as whole processes, beside ``python -c pass``
measured in the same rounds.

    python -m bench.startup [--before TREE ...]          (DUALMEM_BENCH_RUNS=5)

In a new project folder, on ``auto`` (the journal and the embedded graph) and on
``--backend file``, one after the other: ``dualmem init`` (a new home: project id, seeds, the
graph created in ``auto``), ``dualmem status`` of the new home, the first ``dualmem add``, the
first ``dualmem search``, and ``status`` again with one memory. Each step's wall time and CPU
time (user + system, the process and its threads: on a loaded machine the wall time is mostly
waiting for a core), median and p95 of RUNS rounds after one warm-up round (which writes the
bytecode, as an installed package has it).

``--before TREE`` (repeatable) runs the same steps with another checkout of dualmem (e.g. an
archive of main) first on ``PYTHONPATH``, in the same rounds, labelled with its folder's name.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STEPS = (
    ("init", ("init",)),
    ("status (new home)", ("status",)),
    ("first add", ("add", "--kind", "gotcha", "--name", "stale caches",
                   "--body", "stale caches hide the journal's writes")),
    ("first search", ("search", "stale caches")),
    ("status (one memory)", ("status",)),
)


def _env(tree: Path) -> dict[str, str]:
    # Bytecode as an installed dualmem has it: the warm-up round writes it.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DUALMEM_") and k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPATH": os.pathsep.join(filter(None, [str(tree),
                                                              os.environ.get("PYTHONPATH")]))}


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(argv: Sequence[str], cwd: Path, tree: Path) -> tuple[float, float]:
    """Wall and CPU milliseconds of one process, which must succeed."""
    cpu, started = _cpu(), time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=_env(tree), capture_output=True, check=False)
    wall, cpu = time.perf_counter() - started, _cpu() - cpu
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.decode()[-500:]}")
    return wall * 1000, cpu * 1000


def one_round(scratch: Path, trees: Sequence[tuple[str, Path]],
              times: dict[str, list[tuple[float, float]]] | None) -> None:
    """Every step on a new project folder per backend and tree; recorded in ``times`` unless
    this is the warm-up (None)."""
    measured = {"python -c pass (baseline)": timed([sys.executable, "-c", "pass"], scratch, REPO)}
    for backend in ("auto", "file"):
        for note, tree in trees:
            project = Path(tempfile.mkdtemp(prefix="project-", dir=scratch))
            for label, argv in STEPS:
                measured[f"{label} ({backend}){note}"] = timed(
                    [sys.executable, "-m", "memory", "--backend", backend, *argv], project, tree)
    if times is not None:
        for label, taken in measured.items():
            times.setdefault(label, []).append(taken)


def report(times: dict[str, list[tuple[float, float]]]) -> None:
    print(f"  {'':<40}{'wall p50':>9}{'cpu p50':>9}{'cpu p95':>9}")
    for label, measured in times.items():
        cpus = sorted(cpu for _, cpu in measured)
        p95 = cpus[min(len(cpus) - 1, round(0.95 * (len(cpus) - 1)))]
        print(f"  {label:<40}{statistics.median(w for w, _ in measured):>9.0f}"
              f"{statistics.median(cpus):>9.0f}{p95:>9.0f}")
    print(f"  (load average {' '.join(f'{n:.1f}' for n in os.getloadavg())})")


def main(before: Sequence[Path] = ()) -> None:
    runs = int(os.environ.get("DUALMEM_BENCH_RUNS", "5"))
    trees = [("", REPO), *((f" [{tree.name}]", tree.resolve()) for tree in before)]
    print(f"start-up bench, {os.cpu_count()} cpu(s), {runs} rounds, ms")
    times: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="dualmem-bench-startup-") as scratch:
        for run in range(runs + 1):
            one_round(Path(scratch), trees, times if run else None)
    report(times)


if __name__ == "__main__":
    line = argparse.ArgumentParser(prog="python -m bench.startup")
    line.add_argument("--before", type=Path, action="append", default=[], metavar="TREE",
                      help="another checkout of dualmem, measured in the same rounds")
    main(line.parse_args().before)
