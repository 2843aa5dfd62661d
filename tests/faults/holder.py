"""``python holder.py WHAT PATH``: take something, print ``held``, and wait to be killed.

    lock PATH    the file layer's cross-process lock of the folder PATH (as its writers take it)
    graph PATH   the graph database under PATH, open read-write (Kùzu's own lock)
    temp PATH    an atomic write of PATH stopped after its temp file is written and synced,
                 before the rename (where a writer killed mid-write leaves it)
    renamed PATH an upsert of ``KILLED`` into the file layer at PATH stopped after its file is
                 renamed into place, before its folder is synced and the index commits
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from backends.graph import GraphBackend
from backends.model import Episode
from fallback import FileBackend, disk
from fallback.layout import Layout
from fallback.lock import FolderLock

KILLED = Episode.parse(id="ep-killed", group_id="g", kind="pattern", name="never acknowledged",
                       body="renamed into place by a writer killed before its index committed",
                       created_at=datetime(2025, 1, 2, tzinfo=UTC))


def held() -> bool:
    print("held", flush=True)
    time.sleep(3600)
    return False


async def hold_graph(path: Path) -> None:
    graph = await GraphBackend.open(path)
    try:
        held()
    finally:
        await graph.aclose()


async def stop_after_rename(root: Path) -> None:
    files = await FileBackend.open(root, watch=False)
    # The writer's first step after its renames: held there, the lock held, nothing committed.
    disk.sync_folder = lambda folder: held()  # type: ignore[assignment]
    await files.upsert(KILLED)


def main(what: str, path: Path) -> None:
    if what == "lock":
        with disk.held(FolderLock(Layout(path).lock, timeout=1.0, poll=0.001)):
            held()
    elif what == "graph":
        asyncio.run(hold_graph(path))
    elif what == "renamed":
        asyncio.run(stop_after_rename(path))
    else:
        disk.write_atomic(path, b'{"half": "written"}', abandon_if=held)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
