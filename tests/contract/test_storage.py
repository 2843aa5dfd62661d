"""Storage contract: what goes in comes out exactly, once, in order, and stays after a reopen."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest

from backends.errors import InvalidEpisode
from backends.model import Episode
from backends.protocol import BatchUpsert, MemoryBackend
from contract.episodes import BASE_TIME, make


async def listed(store: MemoryBackend, **filters: list[str]) -> list[Episode]:
    return [episode async for episode in store.scan(**filters)]


async def test_a_round_trip_keeps_every_field_exactly(store: MemoryBackend) -> None:
    episode = Episode.parse(
        id="QG:Feature-4.6_x",
        group_id="Project-7__turn_states",
        kind="quality_gate_config",
        name="Gates for feature 4.6 — ünïcödé",
        body='{"gates": ["lint", "types"], "note": "line one\\nline two"}\n  trailing spaces  ',
        source="system_seeding",
        created_at=datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC),
        valid_at=datetime(2024, 3, 1, 5, 30, 0, 1, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        invalid_at=datetime(2030, 1, 1, tzinfo=UTC),
    )
    receipt = await store.upsert(episode)
    # The dual store names the layers that have the write: the graph too, or the journal alone.
    assert receipt.id == episode.id and receipt.layer in {store.layer, "graph", "file"}
    stored = await store.get(episode.id)
    assert stored == episode
    assert stored is not None and stored.content_hash() == episode.content_hash()
    assert stored.valid_at == datetime(2024, 3, 1, 0, 0, 0, 1, tzinfo=UTC)
    assert stored.created_at.utcoffset() == timedelta(0)
    assert await listed(store) == [episode]


async def test_a_batch_is_each_upsert_in_order_the_last_of_an_id_winning(
    store: MemoryBackend,
) -> None:
    assert isinstance(store, BatchUpsert)
    await store.upsert(make(0, kind="pattern", body="old"))
    batch = [
        make(1, kind="pattern"),
        make(0, kind="pattern", group_id="project_b", body="moved and rewritten"),
        make(2, kind="gotcha"),
        make(1, kind="pattern", body="the last version of episode 1"),
    ]
    receipts = await store.upsert_many(batch)
    assert [receipt.id for receipt in receipts] == [episode.id for episode in batch]
    assert len({receipt.layer for receipt in receipts}) == 1
    assert await listed(store) == [batch[1], batch[3], batch[2]]
    assert await listed(store, group_ids=["project_a"], kinds=["pattern"]) == [batch[3]]


async def test_a_batch_with_one_invalid_episode_stores_nothing(store: MemoryBackend) -> None:
    assert isinstance(store, BatchUpsert)
    with pytest.raises(InvalidEpisode):
        await store.upsert_many([make(1), make(2, body="x" * (2 << 20)), make(3)])
    assert await store.count() == 0


async def test_upsert_of_an_existing_id_replaces_it(store: MemoryBackend) -> None:
    await store.upsert(make(1, body="the cache lives in redis"))
    await store.upsert(make(2))
    newer = make(1, name="renamed", body="the cache lives in memcached", source="cli")
    await store.upsert(newer)
    assert await store.count() == 2
    assert await store.get(newer.id) == newer
    assert [hit.episode.id for hit in await store.search("memcached")] == [newer.id]
    assert await store.search("redis") == []


async def test_a_missing_id_gets_none_and_deletes_as_a_no_op(store: MemoryBackend) -> None:
    await store.upsert(make(1))
    assert await store.get("no-such-id") is None
    assert await store.delete("no-such-id") is False
    assert await store.count() == 1


async def test_delete_removes_the_episode_everywhere(store: MemoryBackend) -> None:
    kept, gone = make(1, body="alpha keeps"), make(2, body="alpha goes")
    await store.upsert(kept)
    await store.upsert(gone)
    assert await store.delete(gone.id) is True
    assert await store.delete(gone.id) is False
    assert await store.get(gone.id) is None
    assert await store.count() == 1
    assert await listed(store) == [kept]
    assert [hit.episode.id for hit in await store.search("alpha")] == [kept.id]


async def test_scan_is_ordered_by_time_then_id_and_complete(store: MemoryBackend) -> None:
    same_time = BASE_TIME + timedelta(days=1)
    episodes = [
        make(5),
        make(3, created_at=same_time),
        make(1),
        make(2, created_at=same_time),
        make(4, created_at=BASE_TIME - timedelta(days=365)),
    ]
    for episode in episodes:
        await store.upsert(episode)
    expected = sorted(episodes, key=lambda e: (e.created_at, e.id))
    assert await listed(store) == expected
    assert await store.count() == len(episodes)


async def test_group_and_kind_filters_agree_on_scan_and_count(store: MemoryBackend) -> None:
    episodes = [
        make(1, group_id="project_a", kind="pattern"),
        make(2, group_id="project_a", kind="gotcha"),
        make(3, group_id="project_b", kind="pattern"),
        make(4, group_id="role_constraints", kind="role_constraints"),
    ]
    for episode in episodes:
        await store.upsert(episode)
    cases: list[tuple[dict[str, list[str]], list[Episode]]] = [
        ({}, episodes),
        ({"group_ids": ["project_a"]}, episodes[:2]),
        ({"group_ids": ["project_a", "role_constraints"]}, [*episodes[:2], episodes[3]]),
        ({"kinds": ["pattern"]}, [episodes[0], episodes[2]]),
        ({"group_ids": ["project_b"], "kinds": ["pattern", "gotcha"]}, [episodes[2]]),
        ({"group_ids": ["nobody"]}, []),
        ({"group_ids": []}, []),
    ]
    for filters, expected in cases:
        assert await listed(store, **filters) == expected, filters
        assert await store.count(**filters) == len(expected), filters


async def test_episodes_survive_a_reopen(
    store: MemoryBackend, reopen: Callable[[], Awaitable[MemoryBackend]]
) -> None:
    episodes = [make(n, kind=kind) for n, kind in enumerate(["pattern", "gotcha", "adr", "adr"])]
    for episode in episodes:
        await store.upsert(episode)
    await store.upsert(make(3, kind="adr", body="replaced before closing"))
    await store.delete(episodes[2].id)
    reopened = await reopen()
    expected = [episodes[0], episodes[1], make(3, kind="adr", body="replaced before closing")]
    assert await listed(reopened) == expected
    assert await reopened.count() == 3
    assert [hit.episode.id for hit in await reopened.search("replaced closing")] == [expected[2].id]


async def test_an_empty_store_answers_everything(store: MemoryBackend) -> None:
    assert await store.count() == 0
    assert await listed(store) == []
    assert await store.search("anything at all") == []
