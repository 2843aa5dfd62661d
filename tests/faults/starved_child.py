"""``python starved_child.py HOME WHAT [open|write] [LAYER]``: two writes of a gotcha through
LAYER (``file`` unless given), the first run out of file handles exactly as it opens a file named
WHAT (a view page, say) or, with WHAT ``import:MODULE``, as it imports MODULE (the module's file
is then opened with none left), as a process under ``ulimit -n`` does when its other threads hold
the last handles at that moment; with ``open``, the open of HOME runs out instead. Prints
``unopened TYPE MESSAGE`` when the open refused, ``ack N`` or ``refused N TYPE MESSAGE`` for each
write, as ``fault_child`` does, then the ids the layer holds as one JSON document, and ``done``.
Any other exception escapes: a traceback and a non-zero exit, which the tests refuse."""

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
    """An audit hook that lowers the limit on file handles to none at the first open of a file
    named ``what``, and puts it back at the next event: that open alone fails, with ``EMFILE``.
    With ``import:MODULE``, at the import of MODULE, put back at the first event after its
    opens: its compiled file and then its source cannot be read."""

    def __init__(self, what: str) -> None:
        event, _, self._name = what.rpartition(":")
        self._event = event or "open"
        self._limits = resource.getrlimit(resource.RLIMIT_NOFILE)
        self._state = "armed"
        self._busy = False  # setrlimit raises an event of its own

    def __call__(self, event: str, args: tuple[object, ...]) -> None:
        if self._busy or self._state == "done":
            return
        self._busy = True
        try:
            if self._state == "armed" and event == self._event and self._matches(str(args[0])):
                resource.setrlimit(resource.RLIMIT_NOFILE, (0, self._limits[1]))
                self._state = "opened" if event == "open" else "starved"
            elif self._state == "starved" and event == "open":
                self._state = "opening"
            elif self._state == "opened" or (self._state == "opening" and event != "open"):
                resource.setrlimit(resource.RLIMIT_NOFILE, self._limits)
                self._state = "done"
        finally:
            self._busy = False

    def _matches(self, name: str) -> bool:
        return name == self._name if self._event == "import" else name.endswith("/" + self._name)


async def main(home: Path, what: str, when: str, layer: str) -> None:
    if when == "open":
        sys.addaudithook(Starver(what))
    try:
        opened = open_memory(home, layer)
        store = await opened.__aenter__()
    except DualmemError as exc:
        print(f"unopened {type(exc).__name__} {' '.join(str(exc).split())}", flush=True)
        print("done", flush=True)
        return
    try:
        if when != "open":
            sys.addaudithook(Starver(what))
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
    args = sys.argv[1:]
    asyncio.run(main(Path(args[0]), args[1], args[2] if len(args) > 2 else "write",
                     args[3] if len(args) > 3 else "file"))
