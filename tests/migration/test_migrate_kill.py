"""A migration killed with SIGKILL at a random point resumes: no duplicate, nothing skipped."""

from __future__ import annotations

import asyncio
import random
import signal
import sys
from asyncio.subprocess import PIPE
from pathlib import Path

from backends.graph import GraphBackend
from bench.migrate import lay_down
from fallback import FileBackend
from migrate import Ledger, Migrator
from migration.migrate_child import BATCH
from migration.migrate_helpers import make_episodes

CHILD = str(Path(__file__).with_name("migrate_child.py"))
COUNT = 5000


async def test_a_killed_migration_resumes_exactly(tmp_path: Path, seed: int) -> None:
    episodes = make_episodes(COUNT, groups=7)
    lay_down(tmp_path / "files", episodes)
    rng = random.Random(seed)
    kill_after = rng.randint(1, COUNT // BATCH - 4)
    print(f"SIGKILL after batch {kill_after}, mid-way through the next")

    child = await asyncio.create_subprocess_exec(sys.executable, CHILD, str(tmp_path), stdout=PIPE)
    assert child.stdout is not None
    async for line in child.stdout:
        if line.strip() == f"batch {kill_after}".encode():
            break
    else:
        raise AssertionError("the migration ended before it could be killed")
    await asyncio.sleep(rng.uniform(0.0, 0.2))
    child.send_signal(signal.SIGKILL)
    await child.communicate()
    assert child.returncode == -signal.SIGKILL

    files = await FileBackend.open(tmp_path / "files")
    graph = await GraphBackend.open(tmp_path / "graph")
    ledger = Ledger.open(tmp_path / "migration" / "ledger.sqlite3")
    try:
        resumed = await Migrator(files, graph, ledger).run(hash_all=True)
        # The batches recorded before the kill are not written again; the rest are.
        assert BATCH * kill_after <= resumed.unchanged < COUNT
        assert resumed.written == COUNT - resumed.unchanged
        assert resumed.verification is not None and resumed.verification.clean
        stored = [episode async for episode in graph.scan()]
        assert await graph.count() == COUNT
        assert stored == sorted(episodes, key=lambda e: (e.created_at, e.id))
    finally:
        ledger.close()
        await graph.aclose()
        await files.aclose()
