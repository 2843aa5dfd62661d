"""``SyncMemory``: the same store for callers without an event loop, or inside one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from backends.errors import InvalidEpisode
from backends.model import Episode
from memory import AgentMemory, SyncMemory
from memory.store.config import Config


def episode(text: str, group: str = "proj") -> Episode:
    return Episode.create(group_id=group, kind="gotcha", name=text[:40], body=text)


def test_every_operation_without_an_event_loop(tmp_path: Path) -> None:
    with SyncMemory.open(tmp_path / "home", "file") as memory:
        receipt = memory.upsert(episode("Only one process may open the graph read-write"))
        assert receipt.layer == "file"
        assert memory.get(receipt.id) is not None and memory.get("missing") is None
        hits = memory.search("graph read-write", group_ids=["proj"])
        assert [hit.episode.id for hit in hits] == [receipt.id]
        assert [e.id for e in memory.scan(kinds=["gotcha"])] == [receipt.id]
        assert memory.count(group_ids=["proj"]) == 1
        saved = memory.call(lambda store: AgentMemory(store, memory.project_id).add_pattern(
            "Retry a save once on EBUSY"))
        assert memory.count(group_ids=[memory.project_id]) == 1 and saved.kind == "pattern"
        assert memory.delete(receipt.id) is True and memory.delete(receipt.id) is False
    with pytest.raises(RuntimeError, match="closed"):
        memory.get(receipt.id)
    memory.close()  # closing again is a no-op


def test_the_stores_errors_reach_the_caller(tmp_path: Path) -> None:
    config = Config(home=tmp_path / "home", backend="file", max_body_bytes=10)
    with SyncMemory.open(config=config) as memory, pytest.raises(InvalidEpisode):
        memory.upsert(episode("a body well over ten bytes"))


async def test_inside_a_running_event_loop(tmp_path: Path) -> None:
    # Synchronous code called from async code (a framework's sync tool in an async agent).
    with SyncMemory.open(tmp_path / "home", "file") as memory:
        receipt = memory.upsert(episode("Close the Kùzu database before exiting"))
        assert memory.search("kuzu database", group_ids=["proj"])[0].episode.id == receipt.id
        await asyncio.sleep(0)  # this loop still runs
        assert memory.count() == 1


def test_calling_back_in_from_the_stores_loop_is_refused(tmp_path: Path) -> None:
    with SyncMemory.open(tmp_path / "home", "file") as memory:

        async def reenter(_: object) -> object:
            return memory.count()

        with pytest.raises(RuntimeError, match="its own store's loop"):
            memory.call(reenter)
        assert memory.count() == 0


def test_the_dual_store_with_its_background_work(tmp_path: Path) -> None:
    with SyncMemory.open(tmp_path / "home", "auto") as memory:
        receipt = memory.upsert(episode("The holder replays file memory into the graph"))
        assert receipt.layer == "graph"
        assert memory.search("holder replays", group_ids=["proj"])[0].episode.id == receipt.id
    with SyncMemory.open(tmp_path / "home", "auto") as again:
        assert again.get(receipt.id) is not None
