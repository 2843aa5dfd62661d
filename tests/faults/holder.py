"""``python holder.py WHAT PATH``: take something, print ``held``, and wait to be killed.

    lock PATH    the file layer's cross-process lock of the folder PATH (as its writers take it)
    graph PATH   the graph database under PATH, open read-write (Kùzu's own lock)
    temp PATH    an atomic write of PATH stopped after its temp file is written and synced,
                 before the rename (where a writer killed mid-write leaves it)
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from backends.graph import GraphBackend
from fallback import disk
from fallback.layout import Layout
from fallback.lock import FolderLock


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


def main(what: str, path: Path) -> None:
    if what == "lock":
        with disk.held(FolderLock(Layout(path).lock, timeout=1.0, poll=0.001)):
            held()
    elif what == "graph":
        asyncio.run(hold_graph(path))
    else:
        disk.write_atomic(path, b'{"half": "written"}', abandon_if=held)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
