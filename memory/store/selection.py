"""Runtime selection of the memory layer: which one ``open_memory`` yields, and why."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from os import PathLike
from typing import TYPE_CHECKING, NamedTuple

from backends.errors import BackendUnavailable
from backends.protocol import MemoryBackend
from memory.store.config import Config

if TYPE_CHECKING:  # the graph's modules import numpy: not for a file-layer process
    from backends.graph.embedder import AnyEmbedder


ONE_SHOT = "not holding the graph (a one-shot command: the journal answers)"


class Selection(NamedTuple):
    """The layer in use and the reason it was chosen (shown by ``dualmem status``)."""

    layer: str
    reason: str
    notice: str = ""
    """what a command should tell its user on stderr: its answer lacks what it would hold
    (the team's memory, when its server did not answer)"""


async def open_backend(
    config: Config, *, one_shot: bool = False, embedder: AnyEmbedder | None = None
) -> tuple[MemoryBackend, Selection]:
    """Open the layer ``config.backend`` asks for. The caller must ``aclose`` it.
    ``graph`` raises ``BackendUnavailable`` rather than fall back; ``auto`` is the dual store:
    the journal, and the graph when this process can hold it, saying why. ``one_shot`` (a
    command that opens, reads once and closes) takes no graph lock, which would cost it the
    graph's open and keep a long-running holder out, and runs no watcher: ``auto`` answers from
    the journal, which holds every memory. ``embedder`` (else the one ``config`` names, else
    the built-in one) makes the graph's vectors."""
    # Each layer is imported only when chosen: a file-layer process never loads the graph's
    # dependencies (numpy, kuzu, graphiti), which is most of a short command's start-up.
    if config.backend == "file" or (config.backend == "auto" and one_shot
                                    and config.graph_url is None):
        from fallback import FileBackend

        files = await FileBackend.open(config.files_dir, max_body_bytes=config.max_body_bytes,
                                       watch=not one_shot)
        # In auto the journal holds every memory: a one-shot process reads and writes it
        # alone, and whoever holds the graph indexes its writes.
        return files, Selection("file", "asked for" if config.backend == "file" else ONE_SHOT)
    if config.backend == "auto" and one_shot and config.graph_url is not None:
        from memory.store.graphs import index_folder
        from memory.store.team_journal import TeamJournal
        from memory.store.team_view import open_team_view

        journal = await TeamJournal.open(config.files_dir, config.max_body_bytes)
        folder = index_folder(config)
        assert folder is not None
        view = await open_team_view(journal, config.graph_url, folder)
        return view, Selection(view.layer_in_use, view.reason, view.notice or "")
    if config.backend == "auto":
        from memory.store.dual import open_dual

        dual = await open_dual(config, embedder=embedder)
        return dual, Selection(dual.layer_in_use, dual.reason)
    from backends.graph import NO_ROOM, READ_ONLY, GraphBackend
    from memory.store.graphs import open_graph
    from memory.store.providers import embedder_for, llm_for

    embedder = embedder or embedder_for(config)
    try:
        graph = await open_graph(config, embedder=embedder, llm=llm_for(config))
    except BackendUnavailable as exc:
        if exc.reason not in (READ_ONLY, NO_ROOM):
            raise
        # Reads still work on a read-only or full home; every write raises WriteFailed, saying
        # why.
        graph = await open_graph(config, read_only=True, embedder=embedder)
        return graph, Selection("graph", f"asked for; read-only: {exc.reason}: {exc.detail}")
    if isinstance(graph, GraphBackend):  # embedded: fed by the home's journal in auto
        graph.mark_written_alone()
    return graph, Selection("graph", "asked for")


@asynccontextmanager
async def open_memory(
    home: str | PathLike[str] | None = None,
    backend: str | None = None,
    *,
    config: Config | None = None,
    embedder: str | AnyEmbedder | None = None,
    llm: str | None = None,
    graph_url: str | None = None,
    graph_engine: str | None = None,
) -> AsyncIterator[MemoryBackend]:
    """Open the memory store at ``home`` (default: ``$DUALMEM_HOME``, else the nearest
    ``.dualmem/`` in the working folder or its parents, else ``./.dualmem``). ``embedder`` and
    ``llm`` name a provider as ``MODEL[@URL]`` (see ``Config``); ``embedder`` may also be an
    ``Embedder`` itself. Its graph is on the FalkorDB server ``graph_url`` names
    (``falkor://host:port/graph``, ``redis+unix:///path.sock?graph=NAME``; default
    ``$DUALMEM_GRAPH_URL``), else embedded in the home with ``graph_engine`` (``kuzu``, the
    default, or ``ladybug``)."""
    named = embedder if isinstance(embedder, str) else None
    chosen = config or Config.from_env(home=home, backend=backend, embedder=named, llm=llm,
                                       graph_url=graph_url, graph_engine=graph_engine)
    store, _ = await open_backend(chosen, embedder=None if isinstance(embedder, str) else embedder)
    try:
        yield store
    finally:
        await store.aclose()
