"""Waiting for the watcher, and looking at folders."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import TypeVar, overload

from fallback import FileBackend
from fallback.index import FILE as INDEX_FILE
from fallback.index import ViewEntry
from fallback.keeper import ViewKeeper

T = TypeVar("T")

# A bound on waiting, not a timing claim (the watcher's "about a second" is no test's business):
# a loaded machine may take many seconds, and only a failing test ever waits this long.
WATCH_PATIENCE = 300.0


@overload
async def eventually(
    probe: Callable[[], Awaitable[T]], accept: Callable[[T], bool], patience: float = ...
) -> T: ...


@overload
async def eventually(
    probe: Callable[[], T], accept: Callable[[T], bool], patience: float = ...
) -> T: ...


async def eventually(
    probe: Callable[[], Awaitable[T] | T],
    accept: Callable[[T], bool],
    patience: float = WATCH_PATIENCE,
) -> T:
    """Poll ``probe`` (sync or async) until ``accept`` likes its answer; the last answer when
    time runs out. Callers assert on what it returns: a wait that ran out must fail the test."""
    deadline = time.monotonic() + patience
    while True:
        answer = probe()
        if inspect.isawaitable(answer):
            answer = await answer
        if accept(answer) or time.monotonic() > deadline:
            return answer
        await asyncio.sleep(0.02)


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every path below ``folder`` with its bytes (None for folders), less the derived index,
    which a reader may touch (SQLite's shared-memory file) and which holds no memory of its own."""
    return {
        str(path.relative_to(folder)): None if path.is_dir() else path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if not path.name.startswith(INDEX_FILE)
    }


class WholeKeeper(ViewKeeper):
    """The view tests' oracle: every render writes every page of the views it touches whole,
    never splicing the bullets that changed."""

    def render(self, touched: Iterable[tuple[str, str]], drop: Collection[str] = (),
               changed: Collection[str] | None = None,
               before: Mapping[str, ViewEntry | None] | None = None) -> None:
        super().render(touched, drop)


class WholeRenders(FileBackend):
    """A file store whose views are rendered whole on every write."""

    views_keeper = WholeKeeper
