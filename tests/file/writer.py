"""Run as a separate process by test_concurrency: add N episodes to a file layer folder.

    python writer.py FOLDER PREFIX N
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from backends.model import Episode
from fallback import FileBackend


async def write(folder: Path, prefix: str, count: int) -> None:
    backend = await FileBackend.open(folder)
    try:
        for number in range(count):
            # Patterns now and then, so the views are contended too.
            kind = "pattern" if number % 50 == 0 else "session_insight"
            await backend.upsert(
                Episode.create(
                    group_id=f"group_{number % 3}", kind=kind, key=f"{prefix}-{number}",
                    name=f"{prefix} {number}", body=f"written by {prefix}, number {number}",
                )
            )
    finally:
        await backend.aclose()


if __name__ == "__main__":
    asyncio.run(write(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
