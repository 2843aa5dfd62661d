"""``python migrate_child.py HOME``: migrate HOME's file layer into its graph, printing
``batch N`` after each batch the ledger has recorded (the kill test's clock)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from backends.graph import GraphBackend
from fallback import FileBackend
from migrate import Ledger, Migrator

BATCH = 250


async def main(home: Path) -> None:
    files = await FileBackend.open(home / "files")
    graph = await GraphBackend.open(home / "graph")
    ledger = Ledger.open(home / "migration" / "ledger.sqlite3")
    batches = 0

    def progress(done: int, total: int) -> None:
        nonlocal batches
        batches += 1
        print(f"batch {batches}", flush=True)

    try:
        report = await Migrator(files, graph, ledger, batch_size=BATCH).run(progress=progress)
        print(report.summary(), flush=True)
    finally:
        ledger.close()
        await graph.aclose()
        await files.aclose()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
