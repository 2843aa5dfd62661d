"""With a server, every process writes the graph itself: no lock, no holder, nothing pending."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import orjson
from falkor_server import address_for

from backends.graph.address import ServerAddress
from backends.graph.falkor.backend import FalkorBackend
from fallback import FileBackend

CHILD = str(Path(__file__).with_name("writer_child.py"))
WRITERS = 4
# The figure is 4 x 500 (`make server-writers`); `make test` runs a fifth of it, which
# checks the same promise at a cost the suite can carry twice at once on two cores.
EACH = int(os.environ.get("DUALMEM_SERVER_WRITES", "100"))
DEADLINE = 600  # seconds: a bound on a loaded machine, not a timing claim


def test_four_processes_write_the_server_directly_and_nothing_is_pending(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    address = address_for(home)
    children = [
        subprocess.Popen([sys.executable, CHILD, str(home), str(address), f"w{n}", str(EACH)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for n in range(WRITERS)
    ]
    reports = []
    try:
        for child in children:
            out, err = child.communicate(timeout=DEADLINE)
            assert child.returncode == 0, err
            reports.append(orjson.loads(out))
    finally:  # a failed child must not leave the others running into the next test
        for child in children:
            if child.poll() is None:
                child.kill()
            child.communicate()
    assert reports == [{"layers": {"graph": EACH}, "pending": 0}] * WRITERS
    asyncio.run(holds_every_write(home, address))


async def holds_every_write(home: Path, address: ServerAddress) -> None:
    graph = await FalkorBackend.open(address)
    try:
        assert await graph.count() == WRITERS * EACH
        names = {episode.name async for episode in graph.scan()}
        assert names == {f"w{n} {i}" for n in range(WRITERS) for i in range(EACH)}
        # another process's write, searchable
        hits = await graph.search(f"w3 wrote note {EACH - 1}")
        assert hits and hits[0].episode.name == f"w3 {EACH - 1}"
    finally:
        await graph.aclose()
    journal = await FileBackend.open(home / "files")
    try:
        assert await journal.count() == WRITERS * EACH
    finally:
        await journal.aclose()
