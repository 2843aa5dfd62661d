"""Every real layer, by name. The suites that run against each layer (contract, agent, context)
open them from here, so a new layer joins all of them with one entry in ``FACTORIES``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from falkor_server import address_for
from hypothesis import settings

from backends.graph import GraphBackend
from backends.graph.address import DEFAULT_ENGINE
from backends.graph.kuzu import engines
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
    from backends.graph.falkor.backend import FalkorBackend

    return await FalkorBackend.open(address_for(folder))


async def open_dual_on_falkor(folder: Path) -> MemoryBackend:
    """``auto`` with its graph on the FalkorDB server: the journal, and every process writing
    the server's graph directly."""
    store = await open_dual(Config(home=folder, graph_url=address_for(folder)))
    await store.catch_up()
    return store


FACTORIES: dict[str, Factory] = {
    "file": open_file_layer, "graph": open_graph_layer, "dual": open_dual_store,
    "falkor": open_falkor_layer, "dual-falkor": open_dual_on_falkor,
}
EMBEDDED = ("graph", "dual")
"""the layers over the run's embedded engine (``engines.default``)"""
if engines.default != DEFAULT_ENGINE:
    # The other engine's pass (conftest.py): the files and the FalkorDB server are the same
    # code as on the default pass, which ran them; only the embedded layers run again.
    FACTORIES = {name: FACTORIES[name] for name in EMBEDDED}
LAYERS = sorted(FACTORIES)


def examples(layer: str) -> int:
    """Hypothesis examples for a property that opens a fresh store of ``layer`` at every
    example: the profile's on the files, a fifth on the layers over a database, where an open
    costs ten times as much (the share the stateful contract runs)."""
    return max(2, settings().max_examples // (1 if layer == "file" else 5))


def command_line(layer: str, home: Path) -> list[str]:
    """The global options that open ``layer`` at ``home`` from the command line."""
    backend = {"file": "file", "graph": "graph", "dual": "auto", "falkor": "graph",
               "dual-falkor": "auto"}[layer]
    server = (["--graph-url", str(address_for(home))] if "falkor" in layer else [])
    return ["--home", str(home), "--backend", backend, *server]
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
