"""The fault suite's writer and reader, run as real processes.

    python fault_child.py write HOME LAYER SEED ROUND COUNT [SIZES] [FSIZE] [STOP_AFTER]
        Opens HOME through LAYER (``--backend``), prints ``ready``, then runs the operations of
        ``workload.operations(SEED, ROUND, COUNT, body_bytes=SIZES)``, printing ``ack N`` as soon
        as operation N has returned (acknowledged) and ``refused N TYPE MESSAGE`` when it raised
        dualmem's own error; after STOP_AFTER refusals it stops. ``done`` at the end. With FSIZE,
        no file this process writes may grow beyond FSIZE bytes (RLIMIT_FSIZE: a full disk).
        ``unopened TYPE MESSAGE`` when HOME could not be opened with dualmem's own error.
        Any other exception escapes: a traceback and a non-zero exit, which the tests refuse.
    python fault_child.py state HOME LAYER
        Opens HOME through LAYER and prints one JSON document: the id and content hash of every
        episode ``scan`` yields and what ``count`` says, or the error that kept it from opening.
"""

from __future__ import annotations

import asyncio
import resource
import sys
from pathlib import Path
from typing import Any

import orjson

from backends.errors import DualmemError
from backends.protocol import upsert_all
from faults.workload import operations
from memory.store.selection import open_memory


async def write(home: Path, layer: str, seed: int, round_: int, count: int,
                sizes: tuple[int, ...], stop_after: int) -> None:
    refusals = 0
    try:
        opened = open_memory(home, layer)
        store = await opened.__aenter__()
    except DualmemError as exc:  # a named refusal (no room to open, ...) is an answer too
        print(f"unopened {type(exc).__name__} {' '.join(str(exc).split())}", flush=True)
        print("done", flush=True)
        return
    try:
        print("ready", flush=True)
        for op in operations(seed, round_, count, body_bytes=sizes):
            try:
                if op.puts:
                    await upsert_all(store, list(op.puts))
                for key in op.deletes:
                    await store.delete(key)
            except DualmemError as exc:
                message = " ".join(str(exc).split())
                print(f"refused {op.number} {type(exc).__name__} {message}", flush=True)
                refusals += 1
                if refusals >= stop_after:
                    break
                continue
            print(f"ack {op.number}", flush=True)
    finally:
        await opened.__aexit__(None, None, None)
    print("done", flush=True)


async def state(home: Path, layer: str) -> dict[str, Any]:
    try:
        async with open_memory(home, layer) as store:
            stored = [(e.id, e.content_hash()) async for e in store.scan()]
            return {"episodes": stored, "count": await store.count()}
    except DualmemError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def main(argv: list[str]) -> None:
    mode, home, layer = argv[0], Path(argv[1]), argv[2]
    if mode == "state":
        print(orjson.dumps(asyncio.run(state(home, layer))).decode(), flush=True)
        return
    seed, round_, count = int(argv[3]), int(argv[4]), int(argv[5])
    sizes = tuple(int(n) for n in argv[6].split(",")) if len(argv) > 6 else (200,)
    if len(argv) > 7 and int(argv[7]) > 0:
        limit = int(argv[7])
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    stop_after = int(argv[8]) if len(argv) > 8 else 1 << 30
    asyncio.run(write(home, layer, seed, round_, count, sizes, stop_after))


if __name__ == "__main__":
    main(sys.argv[1:])
