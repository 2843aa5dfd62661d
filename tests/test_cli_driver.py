"""The command driver runs a loopless command's coroutine without an event loop, and refuses
one that waits on what only a loop can wait on."""

from __future__ import annotations

import asyncio
from collections.abc import Generator

import pytest

from memory.cli.driver import LoopNeeded, run


class Pending:
    """An awaitable that waits on something, as a future does."""

    def __await__(self) -> Generator[object, None, None]:
        yield self


async def answer(steps: int) -> int:
    for _ in range(steps):
        await asyncio.sleep(0)  # a bare yield: no loop needed
    return 42


async def waits() -> int:
    await Pending()
    return 0


def test_a_loopless_run_returns_what_the_coroutine_returns() -> None:
    assert run(answer(3), loopless=True) == 42


def test_a_run_under_a_loop_returns_the_same() -> None:
    assert run(answer(3), loopless=False) == 42


def test_a_loopless_run_that_waits_is_refused() -> None:
    with pytest.raises(LoopNeeded, match="without an event loop"):
        run(waits(), loopless=True)
