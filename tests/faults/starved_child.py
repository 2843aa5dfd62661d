"""``python starved_child.py HOME NAME [open]``: two writes of a gotcha through the file layer,
the first run out of file handles exactly as it opens a file named NAME (a view page, say), as
a process under ``ulimit -n`` does when its other threads hold the last handles at that moment;
with ``open``, the open of HOME runs out instead. Prints ``unopened TYPE MESSAGE`` when the open
refused, ``ack N`` or ``refused N TYPE MESSAGE`` for each write, as ``fault_child`` does, then
the ids the layer holds as one JSON document, and ``done``. Any other exception escapes: a
traceback and a non-zero exit, which the tests refuse."""

from __future__ import annotations

import asyncio
import resource
import sys
from pathlib import Path

import orjson

from backends.errors import DualmemError
from backends.model import Episode
from memory.store.selection import open_memory


class Starver:
    """An audit hook that lowers the limit on file handles to none just before the first open
    of a file named ``name``, and puts it back at the next event: that open alone fails, with
    ``EMFILE``."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._limits = resource.getrlimit(resource.RLIMIT_NOFILE)
        self._state = "armed"
        self._busy = False  # setrlimit raises an event of its own

    def __call__(self, event: str, args: tuple[object, ...]) -> None:
        if self._busy or self._state == "done":
            return
        self._busy = True
        try:
            if self._state == "armed" and event == "open" and str(args[0]).endswith(
                    "/" + self._name):
                resource.setrlimit(resource.RLIMIT_NOFILE, (0, self._limits[1]))
                self._state = "starved"
            elif self._state == "starved":
                resource.setrlimit(resource.RLIMIT_NOFILE, self._limits)
                self._state = "done"
        finally:
            self._busy = False


async def main(home: Path, name: str, when: str) -> None:
    if when == "open":
        sys.addaudithook(Starver(name))
    try:
        opened = open_memory(home, "file")
        store = await opened.__aenter__()
    except DualmemError as exc:
        print(f"unopened {type(exc).__name__} {' '.join(str(exc).split())}", flush=True)
        print("done", flush=True)
        return
    try:
        if when != "open":
            sys.addaudithook(Starver(name))
        for number in (1, 2):
            episode = Episode.parse(id=f"starved-{number}", group_id="g", kind="gotcha",
                                    name=f"gotcha {number}", body="file handles ran out")
            try:
                await store.upsert(episode)
            except DualmemError as exc:
                print(f"refused {number} {type(exc).__name__} {' '.join(str(exc).split())}",
                      flush=True)
                continue
            print(f"ack {number}", flush=True)
        stored = sorted([e.id async for e in store.scan()])
    finally:
        await opened.__aexit__(None, None, None)
    print(orjson.dumps({"episodes": stored}).decode(), flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""))
