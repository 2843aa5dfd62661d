"""Every test of the agent-facing memory runs against each real layer, in a tmp folder; tests
of functions that also work without a store take ``maybe_store``, which adds None."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from every_layer import LAYERS, layer, open_layer, store

from backends.protocol import MemoryBackend

__all__ = ["layer", "store"]  # fixtures shared with the other per-layer suites


@pytest.fixture(params=[*LAYERS, None])
async def maybe_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[MemoryBackend | None]:
    if request.param is None:
        yield None
        return
    async with open_layer(request.param, tmp_path / "store") as opened:
        yield opened
