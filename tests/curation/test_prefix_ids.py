"""Ids by prefix from an index (a range of its id index, not a scan of every memory) agree
with a scan of every memory (``ids_property``) on every layer (every_layer.py), whatever the
ids, the prefix and the groups asked for."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from every_layer import FACTORIES, LAYERS
from hypothesis import given, settings
from ids_property import ASKED, STORED, check_ids, memories, prefixes

from backends.model import Episode
from backends.protocol import FindsIds, MemoryBackend, upsert_all
from fallback.store import FileBackend
from memory.curation.ids import AmbiguousId, resolve
from memory.store.selection import open_memory


@pytest.fixture(scope="module", params=LAYERS)
def layer(request: pytest.FixtureRequest) -> Iterator[tuple[asyncio.Runner, MemoryBackend]]:
    """One store of the layer every example adds to: agreement holds whatever it holds."""
    with tempfile.TemporaryDirectory() as folder, asyncio.Runner() as runner:
        store = runner.run(open_layer(request.param, Path(folder)))
        try:
            yield runner, store
        finally:
            runner.run(store.aclose())


async def open_layer(name: str, folder: Path) -> MemoryBackend:
    return await FACTORIES[name](folder)


@settings(deadline=None, max_examples=25)
@given(stored=STORED, **ASKED)
def test_ids_by_prefix_agree_with_a_scan(
    layer: tuple[asyncio.Runner, MemoryBackend], stored: list[tuple[str, str]], picked: int,
    cut: int, other: str, groups: list[str] | None,
) -> None:
    runner, store = layer
    if stored:
        runner.run(upsert_all(store, memories(stored)))
    runner.run(check_ids(store, prefixes(stored, picked, cut, other), groups))


async def test_a_prefix_is_resolved_from_the_index(tmp_path: Path) -> None:
    store = await FileBackend.open(tmp_path, watch=False)
    try:
        await store.upsert_many([Episode.parse(id=key, group_id="g1", kind="note", name=key,
                                               body="b") for key in ("ab1", "ab2", "ac", "xyz")])
        assert await store.ids_starting("ab") == ["ab1", "ab2"]
        assert await store.ids_starting("a", group_ids=["g2"]) == []
        assert await store.ids_starting("\udc80") == []
        assert await resolve(store, "xy") == "xyz"
        with pytest.raises(AmbiguousId, match="3 memories"):
            await resolve(store, "a")
    finally:
        await store.aclose()


async def test_the_dual_store_resolves_a_prefix_from_the_journals_index(tmp_path: Path) -> None:
    async with open_memory(tmp_path, "auto") as store:
        await upsert_all(store, [Episode.parse(id=key, group_id="g1", kind="note", name=key,
                                               body="b") for key in ("ab1", "ab2", "xyz")])
        assert isinstance(store, FindsIds)  # no scan of every memory
        assert await store.ids_starting("ab") == ["ab1", "ab2"]
        assert await store.ids_starting("ab", group_ids=["g2"]) == []
        assert await resolve(store, "xy") == "xyz"
