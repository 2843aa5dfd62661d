"""An agent writing patterns into a home's file layer as fast as it can, with a watcher taking
in what people save in its views: the other side of the views' editor races.

    python view_agent.py HOME GROUP
        Opens HOME's file layer (watching), prints ``ready`` after its first write, then writes
        a pattern of GROUP after another until stdin closes; prints ``wrote N`` and exits.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

from backends.model import Episode
from fallback import FileBackend


async def agent(home: Path, group: str) -> None:
    closed = threading.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        closed.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    files = await FileBackend.open(home)
    wrote = 0
    try:
        while not closed.is_set():
            await files.upsert(Episode.create(group_id=group, kind="pattern",
                                              name=f"agent pattern {wrote}",
                                              body=f"what the agent learnt, number {wrote}",
                                              source="agent"))
            wrote += 1
            if wrote == 1:
                print("ready", flush=True)
    finally:
        await files.aclose()
    print(f"wrote {wrote}", flush=True)


if __name__ == "__main__":
    asyncio.run(agent(Path(sys.argv[1]), sys.argv[2]))
