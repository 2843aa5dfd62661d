"""Running a command's coroutine to its end.

A one-shot read (a search, a prompt hook) opens the file layer, reads and closes: it never
waits on anything, so it runs without an event loop, and never imports asyncio (ssl, sockets,
subprocesses, thread pools: about a fifth of its start-up). Every other command runs under
``asyncio.run``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar, cast

T = TypeVar("T")


class LoopNeeded(RuntimeError):
    """A command run without an event loop waited on something only a loop can wait on: it
    must not be marked as loopless (a bug, never a user's mistake)."""


def run(awaitable: Awaitable[T], *, loopless: bool) -> T:
    """The result of ``awaitable`` (a coroutine), under ``asyncio.run`` unless ``loopless``."""
    work = cast(Coroutine[Any, Any, T], awaitable)
    if not loopless:
        import asyncio

        return asyncio.run(work)
    while True:
        try:
            waited = work.send(None)
        except StopIteration as done:
            result: T = done.value
            return result
        if waited is not None:  # a future (a bare yield, as of asyncio.sleep(0), is fine)
            work.close()
            raise LoopNeeded(f"{work!r} waited on {waited!r} without an event loop")
