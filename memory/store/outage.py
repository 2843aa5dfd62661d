"""A graph that stopped answering a long-running process (a server stopped, killed, unreachable):
its reads go to the journal, which holds every memory this home wrote, until a probe finds the
graph answering again. The dual store asks here whether to try the graph at all: trying a
server that does not answer costs each read up to the connection's timeout.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from backends.errors import (
    BackendUnavailable,
    DualmemError,
    GraphEmptied,
    ServerUnreachable,
    StoreCorrupt,
    WriteFailed,
)
from backends.model import Episode
from backends.protocol import MemoryBackend

if TYPE_CHECKING:
    from backends.graph.protocol import Graph
    from fallback import FileBackend

T = TypeVar("T")

READ_FAILURES = (BackendUnavailable, StoreCorrupt, WriteFailed)
"""what a graph's read may raise that the journal can answer instead"""


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) says the graph's server does not answer."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ServerUnreachable):
            return True
        seen = seen.__cause__
    return False


class Outage:
    """Whether the graph is known not to answer, and why."""

    def __init__(self) -> None:
        self.why: str | None = None

    @property
    def active(self) -> bool:
        return self.why is not None

    def notice(self, exc: DualmemError) -> None:
        """A failure of the graph: an outage when the server did not answer (an emptied graph,
        or a memory it refused, is no outage: the server answered)."""
        if unreachable(exc) and not isinstance(exc, GraphEmptied):
            self.why = str(exc)

    async def probe(self, graph: Graph, epoch: str) -> None:
        """End the outage if the graph answers a query now; else raise its error."""
        await graph.applied(epoch)
        self.why = None


async def read_either(graph: Graph | None, files: FileBackend,
                      read: Callable[[Graph | FileBackend], Awaitable[T]],
                      failed: Callable[[DualmemError], None]) -> T:
    """``read`` from ``graph`` (None: from ``files``); a graph that fails is reported to
    ``failed`` and the journal answers."""
    if graph is None:
        return await read(files)
    try:
        return await read(graph)
    except READ_FAILURES as exc:
        failed(exc)
        return await read(files)


async def scan_either(graph: MemoryBackend | None, files: MemoryBackend,
                      failed: Callable[[DualmemError], None], *,
                      group_ids: Sequence[str] | None, kinds: Sequence[str] | None,
                      ) -> AsyncIterator[Episode]:
    """``scan`` as ``read_either`` reads: a graph failing midway is reported, and the journal
    goes on with what the graph had not given yet."""
    given: set[str] = set()
    if graph is not None:
        try:
            async for episode in graph.scan(group_ids=group_ids, kinds=kinds):
                given.add(episode.id)
                yield episode
            return
        except READ_FAILURES as exc:
            failed(exc)
    async for episode in files.scan(group_ids=group_ids, kinds=kinds):
        if episode.id not in given:
            yield episode


async def newest_either(graph: MemoryBackend | None, files: FileBackend,
                        failed: Callable[[DualmemError], None], *,
                        group_ids: Sequence[str] | None, kinds: Sequence[str] | None,
                        ) -> AsyncIterator[Episode]:
    """``scan_either``'s episodes newest first: the journal's index read newest first when it
    answers alone, else the whole scan reversed (a team's server holds memories the journal
    does not)."""
    if graph is None:
        async for episode in files.newest(group_ids=group_ids, kinds=kinds):
            yield episode
        return
    scanned = [episode async for episode in scan_either(graph, files, failed,
                                                         group_ids=group_ids, kinds=kinds)]
    for episode in reversed(scanned):
        yield episode
