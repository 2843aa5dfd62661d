"""A bench on every layer: the file layer, the graph layer, ``auto`` holding its graph, and
``auto`` in another process while this one holds the graph, as a second agent session would
ask (the bench module runs itself again as ``python -m MODULE --other-process HOME``, which
answers from the journal and prints its answer as JSON).

    results = await other_process.on_every_layer("bench.mine", fill_and_ask, from_answer)
    ...
    def main() -> None:
        other_process.main(run, ask_only)
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import orjson

from backends.protocol import MemoryBackend

FLAG = "--other-process"
T = TypeVar("T")


async def on_every_layer(module: str, fill_and_ask: Callable[[MemoryBackend], Awaitable[T]],
                         from_answer: Callable[[Any], T]) -> dict[str, T]:
    """``fill_and_ask`` (given an empty store) on each layer, and ``from_answer`` of what
    ``module``'s ``--other-process`` answers from the home the holder filled."""
    from backends.graph import GraphBackend
    from fallback import FileBackend
    from memory import open_memory

    results: dict[str, T] = {}
    with tempfile.TemporaryDirectory() as scratch:
        opens: dict[str, Callable[[], Awaitable[MemoryBackend]]] = {
            "file layer": lambda: FileBackend.open(Path(scratch) / "files", watch=False),
            "graph layer": lambda: GraphBackend.open(Path(scratch) / "graph")}
        for name, opening in opens.items():
            store = await opening()
            try:
                results[name] = await fill_and_ask(store)
            finally:
                await store.aclose()
        home = Path(scratch) / "home"
        async with open_memory(home, "auto") as held:
            if not getattr(held, "holds_graph", False):
                raise RuntimeError("auto did not take the graph in an empty home")
            results["auto, graph holder"] = await fill_and_ask(held)
            # Asked while this process still holds the graph, as a second session would.
            answer = await asyncio.to_thread(answer_elsewhere, module, home)
            results["auto, other process"] = from_answer(answer)
    return results


def answer_elsewhere(module: str, home: Path) -> Any:
    """What ``python -m module --other-process home`` answers (its JSON, parsed)."""
    env = dict(os.environ, GRAPHITI_TELEMETRY_ENABLED="false")
    done = subprocess.run([sys.executable, "-m", module, FLAG, str(home)], capture_output=True,
                          check=True, env=env, cwd=Path(__file__).resolve().parents[1])
    return orjson.loads(done.stdout)


async def answer_here(home: Path, ask: Callable[[MemoryBackend], Awaitable[object]]) -> None:
    """Open ``home`` in ``auto`` (its graph held elsewhere), ask, print the answer as JSON."""
    from memory import open_memory

    async with open_memory(home, "auto") as store:
        if getattr(store, "holds_graph", True):
            raise RuntimeError("the other process took the graph: it was meant to be held")
        found = await ask(store)
    sys.stdout.buffer.write(orjson.dumps(found))


def main(run: Callable[[], Coroutine[Any, Any, str]],
         ask: Callable[[MemoryBackend], Awaitable[object]]) -> None:
    """A bench's entry point: the report, or (with ``--other-process HOME``) the answer."""
    if sys.argv[1:2] == [FLAG]:
        asyncio.run(answer_here(Path(sys.argv[2]), ask))
    else:
        print(asyncio.run(run()))
