"""The fault suite's writer and reader, run as real processes.

    python fault_child.py write HOME LAYER SEED ROUND COUNT [SIZES] [FSIZE] [STOP_AFTER] [SCOPE]
        Opens HOME through LAYER (``--backend``), prints ``ready``, then runs the operations of
        ``workload.operations(SEED, ROUND, COUNT, body_bytes=SIZES, scope=SCOPE)``, printing
        ``ack N`` as soon as operation N has returned (acknowledged) and ``refused N TYPE
        MESSAGE`` when it raised dualmem's own error; after STOP_AFTER refusals it stops. ``done``
        at the end. With FSIZE, no file this process writes may grow beyond FSIZE bytes
        (RLIMIT_FSIZE: a full disk). ``unopened TYPE MESSAGE`` when HOME could not be opened with
        dualmem's own error. Through ``auto``, ``graph T`` once this process answers from the
        graph (it holds it and has caught up), T its wall-clock time.
        Any other exception escapes: a traceback and a non-zero exit, which the tests refuse.
    python fault_child.py hold HOME
        Opens HOME through ``auto``, prints ``ready`` once it holds the graph and has caught
        up, and waits to be killed.
    python fault_child.py settle HOME
        Opens HOME through ``auto``, brings the graph up to the journal, prints ``settled``
        and closes it.
    python fault_child.py state HOME LAYER
        Opens HOME through LAYER and prints one JSON document: the id and content hash of every
        episode ``scan`` yields and what ``count`` says, or the error that kept it from opening.
"""

from __future__ import annotations

import asyncio
import resource
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from backends.errors import DualmemError
from backends.protocol import upsert_all
from faults.workload import SHARED, operations
from memory.store.dual import DualBackend
from memory.store.selection import open_memory


async def write(home: Path, layer: str, seed: int, round_: int, count: int,
                sizes: tuple[int, ...], stop_after: int, scope: str) -> None:
    refusals = 0
    serving = False
    try:
        opened = open_memory(home, layer)
        store = await opened.__aenter__()
    except DualmemError as exc:  # a named refusal (no room to open, ...) is an answer too
        print(f"unopened {type(exc).__name__} {' '.join(str(exc).split())}", flush=True)
        print("done", flush=True)
        return
    try:
        print("ready", flush=True)
        for op in operations(seed, round_, count, body_bytes=sizes, scope=scope):
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
            if not serving and getattr(store, "layer_in_use", None) == "graph":
                serving = True
                print(f"graph {time.time()}", flush=True)
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


async def hold(home: Path, *, forever: bool) -> None:
    async with open_memory(home, "auto") as store:
        assert isinstance(store, DualBackend)
        await store.catch_up()
        print("ready" if forever else "settled", flush=True)
        if forever:
            await asyncio.sleep(3600)


def main(argv: list[str]) -> None:
    if argv[0] in ("hold", "settle"):
        asyncio.run(hold(Path(argv[1]), forever=argv[0] == "hold"))
        return
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
    scope = argv[9] if len(argv) > 9 else SHARED
    asyncio.run(write(home, layer, seed, round_, count, sizes, stop_after, scope))


if __name__ == "__main__":
    main(sys.argv[1:])
