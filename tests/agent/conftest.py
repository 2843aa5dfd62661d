"""Every test of the agent-facing memory runs against each real layer, in a tmp folder; tests
of functions that also work without a store take ``maybe_store``, which adds None."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from backends.protocol import MemoryBackend

from .layers import LAYERS, open_layer


@pytest.fixture(params=LAYERS)
def layer(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def store(layer: str, tmp_path: Path) -> AsyncIterator[MemoryBackend]:
    async with open_layer(layer, tmp_path / "store") as opened:
        yield opened


@pytest.fixture(params=[*LAYERS, None])
async def maybe_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[MemoryBackend | None]:
    if request.param is None:
        yield None
        return
    async with open_layer(request.param, tmp_path / "store") as opened:
        yield opened
