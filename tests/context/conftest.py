"""Context assembly runs against every real layer there is, each in a fresh folder."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from backends.model import Episode
from backends.protocol import MemoryBackend
from fallback import FileBackend

try:
    from backends.graph import GraphBackend
except ImportError:  # the graph layer is still being built; the file layer runs alone
    LAYERS = ["file"]
else:
    LAYERS = ["file", "graph"]



@asynccontextmanager
async def open_layer(layer: str, folder: Path) -> AsyncIterator[MemoryBackend]:
    store: MemoryBackend = (
        await FileBackend.open(folder) if layer == "file" else await GraphBackend.open(folder)
    )
    try:
        yield store
    finally:
        await store.aclose()


async def fill(store: MemoryBackend, episodes: Iterable[Episode]) -> None:
    for episode in episodes:
        await store.upsert(episode)


@pytest.fixture(params=LAYERS)
def layer(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def store(layer: str, tmp_path: Path) -> AsyncIterator[MemoryBackend]:
    async with open_layer(layer, tmp_path / "store") as opened:
        yield opened
