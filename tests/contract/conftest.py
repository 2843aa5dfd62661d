"""The backends the contract suite runs against: every layer in ``every_layer.FACTORIES``, each
opened in a fresh folder (and opened again there, for persistence)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from every_layer import FACTORIES, Factory

from backends.protocol import MemoryBackend


class Handle:
    """One backend's folder: open it, close it, open it again at the same place."""

    def __init__(self, factory: Factory, folder: Path) -> None:
        self.factory = factory
        self.folder = folder
        self.current: MemoryBackend | None = None

    async def open(self) -> MemoryBackend:
        await self.close()
        self.current = await self.factory(self.folder)
        return self.current

    async def close(self) -> None:
        if self.current is not None:
            await self.current.aclose()
            self.current = None


@pytest.fixture(params=sorted(FACTORIES))
async def handle(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Handle]:
    opened = Handle(FACTORIES[request.param], tmp_path / "memory")
    yield opened
    await opened.close()


@pytest.fixture
async def store(handle: Handle) -> MemoryBackend:
    return await handle.open()


@pytest.fixture
def reopen(handle: Handle, store: MemoryBackend) -> Callable[[], Awaitable[MemoryBackend]]:
    """Close the store and open the same folder again; returns the new backend."""
    return handle.open
