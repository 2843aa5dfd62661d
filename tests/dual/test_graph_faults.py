"""The graph is derived from the journal and never trusted blindly: whatever happened to it, the
dual store serves every acknowledged memory, says what it did, and makes the graph equal to the
journal again. A home written before the journal existed keeps every memory."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from faults.children import HERE, child_env

from backends.errors import BackendUnavailable
from backends.graph import GraphBackend
from backends.graph.kuzu import salvage
from backends.model import Episode
from backends.protocol import Position
from fallback import FileBackend
from fallback.index import FILE as INDEX_FILE
from memory.cli import main
from memory.store.config import Config
from memory.store.dual import DualBackend
from memory.store.layers import Verdict
from memory.store.selection import open_memory

HOLD_CHILD = HERE / "fault_child.py"


def note(n: int) -> Episode:
    return Episode.create(group_id="proj", kind="note", key=str(n), name=f"note {n}",
                          body=f"the journal keeps note {n}",
                          created_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=n))


async def fill(home: Path) -> list[Episode]:
    """30 memories written through ``auto`` by the graph's holder, 5 of them deleted again."""
    async with open_memory(home, "auto") as store:
        assert isinstance(store, DualBackend) and store.holds_graph
        for n in range(30):
            await store.upsert(note(n))
        for n in range(0, 30, 6):
            assert await store.delete(note(n).id)
    return [note(n) for n in range(30) if n % 6]


def flip_bytes(graph: Path) -> None:
    database = graph / "memory.kuzu"
    data = bytearray(database.read_bytes())
    for offset in range(0, len(data), max(1, len(data) // 64)):
        data[offset] ^= 0xFF
    database.write_bytes(bytes(data))


def truncate(graph: Path) -> None:
    database = graph / "memory.kuzu"
    database.write_bytes(database.read_bytes()[: database.stat().st_size // 2])


async def record(graph: Path, position: Position) -> None:
    store = await GraphBackend.open(graph)
    try:
        await store.record_applied(position)
    finally:
        await store.aclose()


FILE_FAULTS: dict[str, Callable[[Path], object]] = {
    "empty": lambda graph: (graph / "memory.kuzu").write_bytes(b""),
    "truncated": truncate,
    "flipped bytes": flip_bytes,
    "deleted": shutil.rmtree,
}
POSITIONS = {
    "ahead of the journal": lambda epoch: Position(epoch, 10**6),
    "of another journal": lambda epoch: Position("elsewhere", 3),
}


async def check_equal(home: Path, kept: list[Episode]) -> None:
    """The store serves exactly ``kept``, the graph alone holds exactly it, nothing differs."""
    async with open_memory(home, "auto") as store:
        assert isinstance(store, DualBackend)
        await store.catch_up()
        assert [e async for e in store.scan()] == kept
        assert (await store.differences()).changed is False
        status = await store.status()
        assert (status.layer, status.pending, status.journal) == ("graph", 0, len(kept))
    graph = await GraphBackend.open(Config(home=home).graph_dir)
    try:
        assert [e async for e in graph.scan()] == kept
    finally:
        await graph.aclose()


@pytest.mark.parametrize("fault", FILE_FAULTS)
async def test_a_damaged_or_missing_graph_is_rebuilt_from_the_journal(
    fault: str, tmp_path: Path
) -> None:
    kept = await fill(tmp_path)
    graph = Config(home=tmp_path).graph_dir
    FILE_FAULTS[fault](graph)
    await check_equal(tmp_path, kept)
    # A database Kùzu refuses is moved aside for inspection, never deleted; an empty or missing
    # one opens as a new graph, which the journal fills.
    assert moved_aside(tmp_path) == (fault in {"truncated", "flipped bytes"})


def moved_aside(home: Path) -> bool:
    return any((folder / "memory.kuzu").exists() for folder in home.glob("graph.damaged-*"))


@pytest.mark.parametrize("position", POSITIONS)
async def test_a_graph_whose_position_the_journal_does_not_know_is_made_equal(
    position: str, tmp_path: Path
) -> None:
    kept = await fill(tmp_path)
    files = await FileBackend.open(Config(home=tmp_path).files_dir, watch=False)
    epoch = files.position().epoch
    await files.aclose()
    await record(Config(home=tmp_path).graph_dir, POSITIONS[position](epoch))
    await check_equal(tmp_path, kept)


async def test_repair_rewrites_what_the_graph_lost_behind_our_back(tmp_path: Path) -> None:
    kept = await fill(tmp_path)
    graph = await GraphBackend.open(Config(home=tmp_path).graph_dir)
    try:
        for episode in kept[:4]:
            await graph.delete(episode.id)  # as if rows were lost, the position unchanged
    finally:
        await graph.aclose()
    async with open_memory(tmp_path, "auto") as store:
        assert isinstance(store, DualBackend)
        await store.catch_up()  # the count disagrees at take-over: made equal
        assert (await store.differences()).changed is False
        # repair tells what this store's take-over did, then that nothing was left to do
        assert await store.repair() == Verdict(written=4, deleted=0, joined=0)
        assert not (await store.repair()).changed
    await check_equal(tmp_path, kept)


async def test_a_home_of_the_previous_release_keeps_every_memory(tmp_path: Path) -> None:
    """Before the journal, the graph's holder wrote the graph alone, other processes wrote
    files (pending) and tombstones for what they deleted; there was no index."""
    config = Config(home=tmp_path)
    graph = await GraphBackend.open(config.graph_dir)
    files = await FileBackend.open(config.files_dir, watch=False)
    try:
        await graph.upsert_many([note(n) for n in range(20)])
        await files.upsert_many([note(n) for n in range(20, 25)])
        await files.bury([note(3).id])  # deleted by a process that did not hold the graph
    finally:
        await graph.aclose()
        await files.aclose()
    for leftover in config.files_dir.glob(INDEX_FILE + "*"):
        leftover.unlink()
    kept = [note(n) for n in range(25) if n != 3]
    await check_equal(tmp_path, kept)
    # Every memory is in the journal now: the files alone hold them all.
    files = await FileBackend.open(config.files_dir, watch=False)
    try:
        assert [e async for e in files.scan()] == kept
    finally:
        await files.aclose()



def test_an_episode_file_deleted_by_hand_stays_deleted_once_the_index_is_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The graph followed the journal; the index that recorded the delete is gone with it. The
    # graph's copy used to join the journal again, as a memory only the graph held.
    kept = asyncio.run(fill(tmp_path))
    gone = kept.pop(3)
    files = Config(home=tmp_path).files_dir
    next(files.glob(f"episodes/proj/{gone.id}*")).unlink()
    for leftover in files.glob(INDEX_FILE + "*"):
        leftover.unlink()
    assert main(["--home", str(tmp_path), "--json", "repair"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    assert report["repaired"] == {"written": 0, "deleted": 1, "joined": 0}
    asyncio.run(check_equal(tmp_path, kept))
    # A memory written to the graph alone since is not one the journal deleted: it joins.
    alone = note(99)
    assert main(["--home", str(tmp_path), "--backend", "graph", "add", "--group", "proj",
                 "--kind", "note", "--name", alone.name, "--body", alone.body, "--key",
                 "99"]) == 0
    capsys.readouterr()
    for leftover in files.glob(INDEX_FILE + "*"):
        leftover.unlink()
    assert main(["--home", str(tmp_path), "--json", "repair"]) == 0
    assert orjson.loads(capsys.readouterr().out)["repaired"]["joined"] == 1
    async def journal_ids() -> set[str]:
        store = await FileBackend.open(files, watch=False)
        try:
            return {e.id async for e in store.scan()}
        finally:
            await store.aclose()
    assert asyncio.run(journal_ids()) == {e.id for e in kept} | {alone.id}


def test_the_repair_command_reports_a_graph_equal_to_the_journal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = asyncio.run(fill(tmp_path))
    flip_bytes(Config(home=tmp_path).graph_dir)
    assert main(["--home", str(tmp_path), "--json", "repair"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    assert report["journal"] == len(kept)
    assert report["differences"] == {"written": 0, "deleted": 0, "joined": 0}
    assert main(["--home", str(tmp_path), "--backend", "file", "repair"]) == 2
    assert "repair works on the dual store" in capsys.readouterr().err
    asyncio.run(check_equal(tmp_path, kept))


def test_a_graph_another_process_holds_is_never_moved_aside(tmp_path: Path) -> None:
    # The interleaving once seen after a kill -9: a process's open of the graph fails as
    # "corrupt" (it read the file while another process was opening and recovering it), and it
    # moved the folder aside while that process held it and went on writing into it.
    asyncio.run(fill(tmp_path))
    config = Config(home=tmp_path)

    async def refused() -> Any:
        raise BackendUnavailable("graph", "corrupt", "a file under recovery")

    async def open_beside_the_holder() -> str:
        files = await FileBackend.open(config.files_dir, watch=False)
        store = await DualBackend.open(files, refused, config.graph_dir, config.ledger_file)
        try:
            assert not store.holds_graph
            return store.reason
        finally:
            await store.aclose()

    with subprocess.Popen([sys.executable, str(HOLD_CHILD), "hold", str(tmp_path)],
                          stdout=subprocess.PIPE, env=child_env()) as holder:
        assert holder.stdout is not None
        try:
            assert holder.stdout.readline().strip() == b"ready"
            assert "another process" in asyncio.run(open_beside_the_holder())
            assert list(tmp_path.glob("graph.damaged-*")) == []
            assert salvage.held_elsewhere(config.graph_dir / "memory.kuzu")
        finally:
            holder.kill()


def test_a_graph_folder_made_since_the_failed_open_is_not_moved_aside(tmp_path: Path) -> None:
    # Two processes fail on one damaged graph: the first moves it aside and makes a new one;
    # the second, deciding after it, must not move that new one aside too.
    graph = tmp_path / "graph"
    graph.mkdir()
    seen = salvage.identity(graph)
    first = salvage.move_aside(graph, seen)
    assert first is not None and first.name.startswith("graph.damaged-")
    graph.mkdir()  # the first process's new graph
    assert salvage.move_aside(graph, seen) is None
    assert graph.is_dir() and len(list(tmp_path.glob("graph.damaged-*"))) == 1
