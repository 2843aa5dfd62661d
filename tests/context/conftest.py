"""Context assembly runs against every real layer there is, each in a fresh folder."""

from __future__ import annotations

from collections.abc import Iterable

from every_layer import layer, store

from backends.model import Episode
from backends.protocol import MemoryBackend, upsert_all

__all__ = ["fill", "layer", "store"]  # layer, store: fixtures shared by the per-layer suites


async def fill(store: MemoryBackend, episodes: Iterable[Episode]) -> None:
    await upsert_all(store, list(episodes))

