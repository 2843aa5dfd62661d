"""The dual store in one process: the journal takes every write, a failing graph never loses or
hides one, a graph is caught up and taken over, and a write the journal cannot take raises."""

from __future__ import annotations

import asyncio
import sys
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from file.helpers import eventually

from backends.errors import BackendUnavailable, WriteFailed
from backends.graph import GraphBackend
from backends.model import Episode, Receipt
from dual.dual_child import episode
from fallback import FileBackend
from fallback.layout import Layout
from memory.store.config import Config
from memory.store.dual import DualBackend
from memory.store.selection import open_memory

CHILD = str(Path(__file__).with_name("dual_child.py"))


class FlakyGraph(GraphBackend):
    """The real graph layer, whose writes fail while ``failing`` is set (a full disk, say)."""

    failing = False

    async def upsert_many(self, episodes: Sequence[Episode]) -> list[Receipt]:
        if FlakyGraph.failing:
            raise WriteFailed("no space left on device")
        return await super().upsert_many(episodes)

    async def delete(self, episode_id: str) -> bool:
        if FlakyGraph.failing:
            raise WriteFailed("no space left on device")
        return await super().delete(episode_id)


@pytest.fixture
async def flaky(tmp_path: Path) -> AsyncIterator[DualBackend]:
    config = Config(home=tmp_path)
    files = await FileBackend.open(config.files_dir)

    async def open_graph() -> GraphBackend:
        return await FlakyGraph.open(config.graph_dir)

    store = await DualBackend.open(files, open_graph, config.graph_dir, config.ledger_file)
    await store.catch_up()
    yield store
    FlakyGraph.failing = False
    await store.aclose()


async def test_a_failing_graph_loses_and_hides_nothing_and_catches_up_later(
    flaky: DualBackend, tmp_path: Path
) -> None:
    first, second, third = (episode("mine", n) for n in range(3))
    assert (await flaky.upsert(first)).layer == "graph"
    assert (await flaky.upsert(third)).layer == "graph"

    FlakyGraph.failing = True
    newer = first.model_copy(update={"body": "mine wrote 0, then changed it"})
    receipts = [await flaky.upsert(newer), await flaky.upsert(second)]
    assert [(r.layer, r.pending) for r in receipts] == [("file", True), ("file", True)]
    assert await flaky.delete(third.id)  # the journal holds it, whatever the graph does

    # Answered from the journal while the graph fails: every write, each once.
    assert await flaky.get(first.id) == newer
    assert await flaky.get(third.id) is None
    assert [e async for e in flaky.scan()] == [newer, second]
    assert await flaky.count() == 2
    assert [h.episode for h in await flaky.search("changed", limit=10)] == [newer]
    status = await flaky.status()
    assert (status.pending, status.journal) == (3, 2)
    assert "no space left on device" in status.reason

    FlakyGraph.failing = False
    await flaky.catch_up()
    graph = await GraphBackend.open(Config(home=tmp_path).graph_dir)
    try:
        assert [e async for e in graph.scan()] == [newer, second]
    finally:
        await graph.aclose()
    assert (await flaky.status()).pending == 0
    assert flaky.layer_in_use == "graph"


async def test_a_write_no_layer_can_take_raises(tmp_path: Path) -> None:
    config = Config(home=tmp_path)
    files = await FileBackend.open(config.files_dir)

    async def locked() -> GraphBackend:
        raise BackendUnavailable("graph", "locked by another process", "pid 1")

    store = await DualBackend.open(files, locked, config.graph_dir, config.ledger_file)
    try:
        assert "locked by another process" in store.reason
        # A file where the group's folder belongs: the journal cannot take the write.
        (config.files_dir / "episodes" / "proc-mine").write_text("in the way")
        with pytest.raises(WriteFailed):
            await store.upsert(episode("mine", 1))
        assert await store.count() == 0
    finally:
        await store.aclose()


async def test_a_waiting_process_takes_the_graph_over_when_its_holder_exits(
    tmp_path: Path,
) -> None:
    holder = await asyncio.create_subprocess_exec(
        sys.executable, CHILD, "hold", str(tmp_path), "3",
        stdin=PIPE, stdout=PIPE, stderr=PIPE,
    )
    try:
        assert holder.stdout is not None
        assert (await holder.stdout.readline()).strip() == b"ready"
        async with open_memory(tmp_path, "auto") as store:
            assert isinstance(store, DualBackend) and not store.holds_graph
            assert "locked by another process" in store.reason
            mine = episode("mine", 0)
            assert (await store.upsert(mine)).pending
            # The holder's writes are in the journal: every process reads and deletes them.
            assert {e.name async for e in store.scan()} >= {"holder 0", "holder 1", "holder 2"}
            assert await store.delete(episode("holder", 0).id)

            # The holder indexes both, then exits; we take over.
            _, err = await asyncio.wait_for(holder.communicate(b"3\n"), 60)
            assert holder.returncode == 0, err
            for _ in range(600):  # a bound on waiting under load, not a timing claim
                if store.holds_graph:
                    break
                await asyncio.sleep(0.1)
            assert store.holds_graph
            await store.catch_up()  # holding is not yet caught up: a write may still be pending
            assert {e.name async for e in store.scan()} == {"mine 0", "holder 1", "holder 2"}
            assert (await store.upsert(episode("mine", 1))).layer == "graph"
            assert store.reason == "this process holds the graph"
            assert (await store.status()).pending == 0
    finally:
        if holder.returncode is None:
            holder.kill()
            await holder.wait()


async def test_with_no_graph_to_hold_the_journal_takes_in_hand_edits_itself(
    tmp_path: Path,
) -> None:
    """Only the graph's holder watches the journal; when no process can hold it, each does."""
    config = Config(home=tmp_path)
    files = await FileBackend.open(config.files_dir, watch=False)

    async def missing() -> GraphBackend:
        raise BackendUnavailable("graph", "not installed")

    store = await DualBackend.open(files, missing, config.graph_dir, config.ledger_file)
    try:
        view = Layout(config.files_dir).view_path("g", "pattern")
        view.parent.mkdir(parents=True, exist_ok=True)
        bullet = "Write a temp file, then rename it into place"
        view.write_text(f"# Patterns\n\n- {bullet}\n")
        hits = await eventually(lambda: store.search("temp file rename", group_ids=["g"]), bool)
        assert [hit.episode.body for hit in hits] == [bullet]
    finally:
        await store.aclose()
