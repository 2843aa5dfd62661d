"""Ids by prefix from an index (a range of its id index, not a scan of every memory) agree
with a scan of every memory (``ids_property``) on every layer (every_layer.py), whatever the
ids, the prefix and the groups asked for."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from every_layer import FACTORIES, LAYERS, open_file_layer, open_graph_layer
from hypothesis import given, settings
from ids_property import ASKED, STORED, check_ids, memories, prefixes

from backends.graph import GraphBackend
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


def index_of(store: MemoryBackend) -> sqlite3.Connection:
    """The connection to the layer's SQLite index (the file layer's, the graph's)."""
    if isinstance(store, GraphBackend):
        return store._open_core().index._db
    assert isinstance(store, FileBackend)
    return store._index._db


@pytest.mark.parametrize("open_layer", [open_file_layer, open_graph_layer])
async def test_ids_by_prefix_read_a_range_of_the_id_whatever_the_groups(
        open_layer: Callable[[Path], Awaitable[MemoryBackend]], tmp_path: Path) -> None:
    """Given the groups, SQLite would rather walk the group's index: every memory of it."""
    store = await open_layer(tmp_path)
    assert isinstance(store, FindsIds)
    try:
        await upsert_all(store, memories([("ab1", "g1"), ("ab2", "g2"), ("b", "g1")]))
        ran: list[str] = []
        index_of(store).set_trace_callback(ran.append)
        assert await store.ids_starting("ab", group_ids=["g1"]) == ["ab1"]
        index_of(store).set_trace_callback(None)
        plans = [row[3] for statement in ran if statement.lstrip().startswith("SELECT")
                 for row in index_of(store).execute("EXPLAIN QUERY PLAN " + statement)]
        assert plans and all("PRIMARY KEY" in plan for plan in plans), plans
    finally:
        await store.aclose()
