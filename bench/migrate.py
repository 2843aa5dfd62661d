"""Migration at 10k: file memory into an empty graph, then a re-run with nothing new.

    python -m bench.migrate [SIZE]      (default: 10000)

Targets (issue 4): the first run under 10 s, the re-run under 1 s. Both runs include their
verification (the first compares every group by content, the re-run counts each group).
Opening the layers is timed apart: it is not migration work.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from backends.graph import GraphBackend
from backends.model import Episode
from bench.file_layer import synthetic
from fallback import FileBackend, codec
from fallback.layout import Layout
from migrate import Ledger, MigrationReport, Migrator

FIRST_TARGET_S = 10.0
RERUN_TARGET_S = 1.0


def lay_down(root: Path, episodes: Iterable[Episode]) -> None:
    """Write episodes as the file layer stores them, without its fsync per file: setup for
    benches and tests, where ``upsert`` one by one would take most of the time."""
    layout = Layout(root)
    for episode in episodes:
        path = layout.episode_path(episode.group_id, episode.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(codec.encode(episode))


async def measure(home: Path, size: int) -> None:
    lay_down(home / "files", synthetic(size))
    clock = time.perf_counter()
    files = await FileBackend.open(home / "files")
    graph = await GraphBackend.open(home / "graph")
    opened = time.perf_counter() - clock
    ledger = Ledger.open(home / "migration" / "ledger.sqlite3")
    try:
        first = await Migrator(files, graph, ledger).run()
        # A new migrator, as a new process would have: no content hashes cached.
        rerun = await Migrator(files, graph, ledger).run()
        stored = await graph.count()
    finally:
        ledger.close()
        await graph.aclose()
        await files.aclose()
    print(f"migration of {size:,} file episodes into an empty graph", end=" ")
    print(f"(layers opened in {opened:.2f} s)")
    for label, report, target in (
        ("first run", first, FIRST_TARGET_S),
        ("re-run, nothing new", rerun, RERUN_TARGET_S),
    ):
        verdict = "ok" if report.seconds < target and report.ok else "MISSED"
        rate = f", {report.written / report.seconds:,.0f} episodes/s" if report.written else ""
        print(f"  {label:<20} {report.seconds:6.2f} s  (target < {target:g} s: {verdict}{rate})")
        print(f"    {report.summary()}")
    print(f"  graph holds {stored:,} episodes")
    _check(first, rerun, stored, size)


def _check(first: MigrationReport, rerun: MigrationReport, stored: int, size: int) -> None:
    assert first.written == size and stored == size, "the graph must hold every episode once"
    assert rerun.written == 0 and rerun.deleted == 0, "a re-run must write nothing"


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    size = int(args[0]) if args else 10_000
    with tempfile.TemporaryDirectory(prefix="dualmem-bench-migrate-") as home:
        asyncio.run(measure(Path(home), size))


if __name__ == "__main__":
    main()
