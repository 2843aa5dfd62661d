"""Opening each real layer in a folder, for the tests of the agent-facing memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from backends.graph import GraphBackend
from backends.protocol import MemoryBackend
from fallback import FileBackend

LAYERS = ["file", "graph"]


@asynccontextmanager
async def open_layer(layer: str, folder: Path) -> AsyncIterator[MemoryBackend]:
    store: MemoryBackend
    if layer == "file":
        store = await FileBackend.open(folder)
    else:
        store = await GraphBackend.open(folder)
    try:
        yield store
    finally:
        await store.aclose()
