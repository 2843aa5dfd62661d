"""How fast the memory browser answers (issue 35): each request the page makes, timed from a
client on loopback against ``dualmem ui`` over a home of SIZE memories, beside the one-shot
``dualmem search`` of the same query and ``python -c pass``, measured in the same run.

    python -m bench.ui_latency [SIZE]       (default 10000; DUALMEM_BENCH_RUNS=50)

Target: p95 <= 200 ms at 10k for every request (the file layer; ``auto`` serves the same
answers from the same journal).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.cli_latency import Command, _dualmem, _timed, project_home
from bench.locomo import percentiles

TARGET_MS = 200.0


def _serve(home: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(_dualmem("--home", str(home), "--backend", "file", "ui"),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert server.stdout is not None
    found = re.search(r"http://\S+", server.stdout.readline())
    if found is None:
        server.kill()
        raise RuntimeError("dualmem ui printed no URL")
    return server, found.group(0)


def main(size: int = 10000) -> None:
    runs = int(os.environ.get("DUALMEM_BENCH_RUNS", "50"))
    with tempfile.TemporaryDirectory(prefix="dualmem-bench-ui-") as scratch:
        folder = Path(scratch)
        home, queries = project_home(folder, size)
        server, url = _serve(home)
        base, token = url.split("/?token=")
        times: dict[str, list[float]] = {}
        try:
            with httpx.Client(base_url=base, headers={"X-Dualmem-Token": token}) as client:
                def timed(label: str, path: str) -> httpx.Response:
                    started = time.perf_counter()
                    response = client.get(path)
                    times.setdefault(label, []).append(time.perf_counter() - started)
                    response.raise_for_status()
                    return response

                for run in range(runs + 1):
                    query = queries[run % len(queries)]
                    timed("page", f"/?token={token}")
                    hits = timed("search as you type", f"/api/search?q={query}").json()["hits"]
                    timed("timeline (300 newest)", "/api/timeline")
                    timed("one memory with its history", f"/api/memory/{hits[0]['id']}")
                    timed("decisions", "/api/decisions")
                    if run == 0:  # the first round warms up (and builds the index)
                        times.clear()
        finally:
            server.terminate()
            server.wait(timeout=30)
        for run in range(min(runs, 10)):
            for command in (Command("python -c pass (baseline)", [sys.executable, "-c", "pass"]),
                            Command("dualmem search, one-shot (baseline)", _dualmem(
                                "--home", str(home), "--backend", "file", "search",
                                queries[run % len(queries)]))):
                times.setdefault(command.label, []).append(_timed(command, folder)[0])
    print(f"dualmem ui, {size:,} memories, {runs} requests each, wall ms; load average "
          f"{' '.join(f'{n:.1f}' for n in os.getloadavg())}")
    for label, walls in times.items():
        p50, p95 = percentiles(walls)
        verdict = "" if "baseline" in label else ("  ok" if p95 <= TARGET_MS else "  over target")
        print(f"  {label:<36} p50 {p50:7.1f}  p95 {p95:7.1f}{verdict}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10000)
