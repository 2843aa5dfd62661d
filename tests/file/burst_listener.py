"""Run as a separate process by test_watch: make folders in bursts below a watched file layer,
then type a bullet in a view; exit 0 once it is a memory, 1 if it never becomes one.

    python -W error burst_listener.py FOLDER
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from contract.episodes import make

from backends.model import natural_key, stable_id
from fallback import FileBackend
from file.helpers import eventually


async def listen(home: Path) -> bool:
    files = await FileBackend.open(home)
    try:
        await files.upsert(make(1, kind="pattern"))
        for number in range(40):
            burst = home / f"burst-{number}"
            burst.mkdir()
            for inner in range(100):  # made while watchdog starts watching ``burst``
                (burst / str(inner)).mkdir()
        with (home / "views" / "project_a" / "patterns.md").open("a") as markdown:
            markdown.write("- typed after the burst\n")
        typed = stable_id("project_a", "pattern", natural_key("typed after the burst"))
        return await eventually(lambda: files.get(typed), bool) is not None
    finally:
        await files.aclose()


if __name__ == "__main__":
    sys.exit(0 if asyncio.run(listen(Path(sys.argv[1]))) else 1)
