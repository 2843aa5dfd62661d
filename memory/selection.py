"""Runtime selection of the memory layer: which one ``open_memory`` yields, and why."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from os import PathLike

from backends.errors import BackendUnavailable
from backends.graph import NO_ROOM, READ_ONLY, GraphBackend
from backends.protocol import MemoryBackend
from fallback import FileBackend
from memory.config import Config
from memory.dual import open_dual


@dataclass(frozen=True)
class Selection:
    """The layer in use and the reason it was chosen (shown by ``dualmem status``)."""

    layer: str
    reason: str


async def open_backend(config: Config) -> tuple[MemoryBackend, Selection]:
    """Open the layer ``config.backend`` asks for. The caller must ``aclose`` it.
    ``graph`` raises ``BackendUnavailable`` rather than fall back; ``auto`` is the dual store:
    the graph when this process can hold it, else the file layer (pending replay), saying why."""
    if config.backend == "file":
        files = await FileBackend.open(config.files_dir, max_body_bytes=config.max_body_bytes)
        return files, Selection("file", "asked for")
    if config.backend == "auto":
        dual = await open_dual(config)
        return dual, Selection(dual.layer_in_use, dual.reason)
    try:
        graph = await GraphBackend.open(config.graph_dir, max_body_bytes=config.max_body_bytes)
    except BackendUnavailable as exc:
        if exc.reason not in (READ_ONLY, NO_ROOM):
            raise
        # Reads still work on a read-only or full home; every write raises WriteFailed, saying
        # why.
        graph = await GraphBackend.open(config.graph_dir, max_body_bytes=config.max_body_bytes,
                                        read_only=True)
        return graph, Selection("graph", f"asked for; read-only: {exc.reason}: {exc.detail}")
    return graph, Selection("graph", "asked for")


@asynccontextmanager
async def open_memory(
    home: str | PathLike[str] | None = None,
    backend: str | None = None,
    *,
    config: Config | None = None,
) -> AsyncIterator[MemoryBackend]:
    """Open the memory store at ``home`` (default: ``$DUALMEM_HOME`` or ``./.dualmem``)."""
    store, _ = await open_backend(config or Config.from_env(home=home, backend=backend))
    try:
        yield store
    finally:
        await store.aclose()
