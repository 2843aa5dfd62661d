"""Every real layer, by name. The suites that run against each layer (contract, agent, context)
open them from here, so a new layer joins all of them with one entry in ``FACTORIES``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from falkor_server import address_for

from backends.graph import GraphBackend, engines
from backends.protocol import MemoryBackend
from fallback import FileBackend
from memory.store.config import Config
from memory.store.dual import open_dual

Factory = Callable[[Path], Awaitable[MemoryBackend]]


async def open_file_layer(folder: Path) -> MemoryBackend:
    return await FileBackend.open(folder)


async def open_graph_layer(folder: Path) -> MemoryBackend:
    return await GraphBackend.open(folder, engine=engines.default)


async def open_dual_store(folder: Path) -> MemoryBackend:
    """``auto``: the file journal with the graph, caught up before the test begins."""
    store = await open_dual(Config(home=folder, graph_engine=engines.default))
    await store.catch_up()
    return store


async def open_falkor_layer(folder: Path) -> MemoryBackend:
    """The graph layer on the run's FalkorDB server (falkor_server.py), a graph per folder."""
    from backends.graph.falkor import FalkorBackend

    return await FalkorBackend.open(address_for(folder))


FACTORIES: dict[str, Factory] = {
    "file": open_file_layer, "graph": open_graph_layer, "dual": open_dual_store,
    "falkor": open_falkor_layer,
}
LAYERS = sorted(FACTORIES)
BACKEND_OPTION = {"file": "file", "graph": "graph", "dual": "auto", "falkor": "graph"}
"""the ``--backend`` value that opens each layer from the command line"""


@asynccontextmanager
async def open_layer(layer: str, folder: Path) -> AsyncIterator[MemoryBackend]:
    store = await FACTORIES[layer](folder)
    try:
        yield store
    finally:
        await store.aclose()


@pytest.fixture(params=LAYERS)
def layer(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def store(layer: str, tmp_path: Path) -> AsyncIterator[MemoryBackend]:
    async with open_layer(layer, tmp_path / "store") as opened:
        yield opened
