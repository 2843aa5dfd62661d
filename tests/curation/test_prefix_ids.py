"""Ids by prefix from the journal's index (a range of its id index) agree with a scan of every
memory, whatever the ids, the prefix and the groups asked for."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.model import EPISODE_ID, Episode
from backends.protocol import FindsIds, upsert_all
from fallback.store import FileBackend
from memory.curation.ids import AmbiguousId, resolve
from memory.store.selection import open_memory

GROUPS = ("g1", "g2")


@pytest.fixture(scope="module")
def journal() -> Iterator[tuple[asyncio.Runner, FileBackend]]:
    """One journal every example adds to: agreement holds whatever it already holds."""
    with tempfile.TemporaryDirectory() as folder, asyncio.Runner() as runner:
        store = runner.run(FileBackend.open(Path(folder), watch=False))
        try:
            yield runner, store
        finally:
            runner.run(store.aclose())


async def scanned(store: FileBackend, prefix: str, group_ids: list[str] | None) -> list[str]:
    return sorted([e.id async for e in store.scan(group_ids=group_ids)
                   if e.id.startswith(prefix)])


ids = st.from_regex(EPISODE_ID, fullmatch=True).map(lambda i: i[:12])


@settings(deadline=None, max_examples=60)
@given(stored=st.lists(st.tuples(ids, st.sampled_from(GROUPS)), max_size=12),
       picked=st.integers(min_value=0), cut=st.integers(min_value=0, max_value=12),
       other=st.text(max_size=4), groups=st.sampled_from([None, ["g1"], ["g2"], [], GROUPS]))
def test_ids_by_prefix_agree_with_a_scan(
    journal: tuple[asyncio.Runner, FileBackend], stored: list[tuple[str, str]], picked: int,
    cut: int, other: str, groups: list[str] | None,
) -> None:
    runner, store = journal
    episodes = [Episode.parse(id=key, group_id=group, kind="note", name=key, body="b")
                for key, group in stored]
    if episodes:
        runner.run(store.upsert_many(episodes))
    prefixes = [other, *([stored[picked % len(stored)][0][:cut]] if stored else [])]
    for prefix in prefixes:
        found = runner.run(store.ids_starting(prefix, group_ids=groups))
        assert found == runner.run(scanned(store, prefix, groups)), prefix


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
