"""The whole-process time of ``dualmem hook post-tool-use`` (issue 30), which Claude Code runs
after every matched tool call, beside ``python -c pass`` measured in the same rounds.

    python -m bench.tool_hook_latency [--before TREE] [SIZE]
                                            (default 10000; DUALMEM_BENCH_RUNS=30)

A home of SIZE synthetic episodes (``bench.cli_latency.project_home``) and 50 gotchas naming
files ``src/module_N.py``. Each round runs, in turn: a ``Read`` of a file memory names (a new
session each round, so it is answered), the same ``Read`` again (answered before: nothing), a
``Bash`` ``ls`` (no file: answered before any store is opened) and ``python -c pass``.
Target: p95 <= 150 ms at 10k on the file layer. ``--before TREE`` runs each hook call a second
time with another checkout of dualmem (``bench.cli_latency``), in the same rounds.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import orjson

from backends.model import Episode
from bench.cli_latency import REPO, Command, _dualmem, _timed, project_home
from bench.locomo import percentiles
from bench.migrate import lay_down
from memory.store.project import ensure_project_id

TARGET_MS = 150.0
NAMED = 50


def _payload(folder: Path, session: str, tool: str, given: dict[str, str]) -> bytes:
    return orjson.dumps({
        "session_id": session, "transcript_path": str(folder / "t.jsonl"), "cwd": str(folder),
        "permission_mode": "default", "hook_event_name": "PostToolUse", "tool_name": tool,
        "tool_input": given, "tool_response": {"success": True}, "tool_use_id": "toolu_1"})


def main(size: int = 10000, before: Path | None = None) -> None:
    runs = int(os.environ.get("DUALMEM_BENCH_RUNS", "30"))
    with tempfile.TemporaryDirectory(prefix="dualmem-bench-tool-") as scratch:
        folder = Path(scratch)
        home, _ = project_home(folder, size)
        project, _ = ensure_project_id(home / "project.json", "bench")
        lay_down(home / "files", [Episode.create(
            group_id=project, kind="gotcha", name=f"module_{n} keeps its cache per process",
            body=f"src/module_{n}.py keeps its cache per process: clear it in tests")
            for n in range(NAMED)])
        hook = _dualmem("--backend", "file", "hook", "post-tool-use")
        times: dict[str, list[tuple[float, float]]] = {}
        for run in range(runs + 1):
            read = {"file_path": str(folder / "src" / f"module_{run % NAMED}.py")}
            rounds = [(REPO, f"bench-{run}", "")]
            if before is not None:  # sessions of its own: each tree tells of a file once
                rounds.append((before, f"before-{run}", " [before]"))
            calls = (("Read, answered", "Read", read), ("Read, told before", "Read", read),
                     ("Bash ls, no file", "Bash", {"command": "ls -la"}))
            measured = [Command(f"post-tool-use {label}{note}", hook,
                                _payload(folder, session, tool, given), tree)
                        for tree, session, note in rounds for label, tool, given in calls]
            for command in (
                Command("python -c pass (baseline)", [sys.executable, "-c", "pass"]),
                *measured,
            ):
                timed = _timed(command, folder)
                if run:  # the first round warms up (and builds the index)
                    times.setdefault(command.label, []).append(timed)
    print(f"post-tool-use hook, {size:,} episodes, {runs} runs each, ms of the whole process "
          f"(wall; CPU user+sys); load average "
          f"{' '.join(f'{n:.1f}' for n in os.getloadavg())}")
    for label, timed in times.items():
        p50, p95 = percentiles([wall for wall, _ in timed])
        c50, c95 = percentiles([cpu for _, cpu in timed])
        verdict = "" if label.startswith("python") else (
            "  ok" if c95 <= TARGET_MS else "  over target")
        print(f"  {label:<42} wall p50 {p50:6.0f} p95 {p95:6.0f}   CPU p50 {c50:5.0f} "
              f"p95 {c95:5.0f}{verdict} (CPU)")


if __name__ == "__main__":
    line = argparse.ArgumentParser(prog="python -m bench.tool_hook_latency")
    line.add_argument("--before", type=Path, metavar="TREE",
                      help="another checkout of dualmem, measured in the same rounds")
    line.add_argument("size", type=int, nargs="?", default=10000, metavar="SIZE")
    parsed = line.parse_args()
    main(parsed.size, parsed.before)
