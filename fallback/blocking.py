"""Blocking file work, kept off a running event loop.

Under an event loop (a server, a long-lived process) the work runs in a thread so that the loop
goes on answering. A one-shot command that ``memory.cli`` drives without a loop runs it inline
and never imports asyncio, whose import (ssl, sockets, subprocesses) is a good part of its
start-up.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


async def blocking(work: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``work(*args, **kwargs)``: in a thread under a running loop, else here."""
    if "asyncio" in sys.modules:  # no loop can run before asyncio is imported
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            return await asyncio.to_thread(work, *args, **kwargs)
    return work(*args, **kwargs)
