"""Ids by prefix from an index (a range of its id index, not a scan of every memory) agree
with a scan of every memory (``ids_property``) on every layer (every_layer.py), whatever the
ids, the prefix and the groups asked for."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from every_layer import FACTORIES, LAYERS, open_file_layer, open_graph_layer
from hypothesis import given, settings
from ids_property import ASKED, STORED, check_ids, memories, prefixes

from backends.graph import GraphBackend
from backends.model import Episode
from backends.protocol import FindsIds, MemoryBackend, upsert_all
from curation.conftest import PROJECT
from fallback.store import FileBackend
from memory.context.cache import CachedStore
from memory.curation.ids import AmbiguousId, resolve
from memory.curation.operations import Curator
from memory.store.selection import open_memory


@pytest.fixture(scope="module", params=LAYERS)
def filled(request: pytest.FixtureRequest) -> Iterator[tuple[asyncio.Runner, MemoryBackend]]:
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
    filled: tuple[asyncio.Runner, MemoryBackend], stored: list[tuple[str, str]], picked: int,
    cut: int, other: str, groups: list[str] | None,
) -> None:
    runner, store = filled
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
        async with by_the_id(index_of(store)):
            assert await store.ids_starting("ab", group_ids=["g1"]) == ["ab1"]
    finally:
        await store.aclose()


async def test_the_mcp_servers_curator_resolves_from_the_index_behind_its_cache(
        tmp_path: Path) -> None:
    """The cache in front of the store (as ``memory.mcp.server`` builds the curator) shows no
    ``FindsIds``: resolving through it scanned every memory."""
    files = await FileBackend.open(tmp_path / "files", watch=False)
    try:
        await upsert_all(files, memories([("ab1", "g1"), ("ab2", "g1"), ("xyz", "g2")]))
        curator = Curator(CachedStore(files), PROJECT, tmp_path / "files", layer=files)
        async with by_the_id(index_of(files)):
            assert await curator.resolve("xy") == "xyz"
    finally:
        await files.aclose()


@contextlib.asynccontextmanager
async def by_the_id(db: sqlite3.Connection) -> AsyncIterator[None]:
    """Every query the block runs on ``db`` is planned as a lookup or range of the primary
    key (the id), and one runs: none walks another index or the table."""
    ran: list[str] = []
    db.set_trace_callback(ran.append)
    try:
        yield
    finally:
        db.set_trace_callback(None)
    plans = [row[3] for statement in ran if statement.lstrip().startswith("SELECT")
             for row in db.execute("EXPLAIN QUERY PLAN " + statement)]
    assert plans and all("PRIMARY KEY" in plan for plan in plans), plans
