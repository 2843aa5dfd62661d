"""A graph whose key index holds keys of rows never committed (what Kùzu 0.11 can leave when
its process is killed mid-checkpoint) takes those ids again: the database is rewritten from
its rows, nothing stored is lost, and the damaged file is kept (salvage.py)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from migration.migrate_helpers import make_episodes

from backends.graph import GraphBackend
from backends.graph.kuzu import engines

FIXTURE = Path(__file__).with_name("fixtures") / "lost-keys.tar.gz"  # make_lost_keys.py
LOST_BATCH = 250  # at least the batch the killed writer was writing

pytestmark = pytest.mark.skipif(engines.default != "kuzu",
                                reason="the damaged database is a Kùzu 0.11 file")


def unpack(folder: Path) -> Path:
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(folder, filter="data")
    return folder


# Run in a process of its own: closing such a database after writes to it can abort the
# process (Kùzu's "double free or corruption"), which is why the store never closes one it has
# written to after the damage showed (salvage.py). The child leaves without closing it.
REFUSED = """
import os, sys, kuzu
connection = kuzu.Connection(kuzu.Database(sys.argv[1]))
for key in sys.argv[2:]:
    try:
        connection.execute("CREATE (e:Episodic {uuid: $id})", {"id": key})
    except RuntimeError as exc:
        print(key if "duplicated primary key" in str(exc) else f"other: {exc}", flush=True)
os._exit(0)
"""


def refused_keys(file: Path, ids: list[str]) -> list[str]:
    """The ids Kùzu refuses to create, each on its own, though no row has them."""
    done = subprocess.run([sys.executable, "-c", REFUSED, str(file), *ids],
                          capture_output=True, text=True, timeout=300, check=True)
    return done.stdout.split()


@pytest.mark.parametrize("shadow", [True, False], ids=["checkpoint-cut-short", "unsignalled"])
async def test_keys_left_by_a_killed_writer_are_written_again(tmp_path: Path,
                                                              shadow: bool) -> None:
    """With the checkpoint's shadow file left, the open rewrites the database; without it, the
    first write refused for such a key does."""
    graph_dir = unpack(tmp_path / "graph")
    if not shadow:
        (graph_dir / "memory.kuzu.shadow").unlink()
    graph = await GraphBackend.open(graph_dir)
    try:
        assert len(list(graph_dir.glob("memory.kuzu.damaged-*"))) == shadow
        before = [episode async for episode in graph.scan()]
        episodes = make_episodes(len(before) + LOST_BATCH)
        assert before == sorted(episodes[:len(before)], key=lambda e: (e.created_at, e.id))
        # The fixture is what it claims: some of the lost batch's ids cannot be created.
        lost = [episode.id for episode in episodes[len(before):]]
        assert refused_keys(unpack(tmp_path / "probe") / "memory.kuzu", lost)

        # Rewrites of stored episodes first, then the lost ids (a resumed migration's batch):
        # closing the damaged database after such writes would abort this process.
        await graph.upsert_many(episodes)
        stored = [episode async for episode in graph.scan()]
        assert stored == sorted(episodes, key=lambda e: (e.created_at, e.id))
    finally:
        await graph.aclose()
    (aside,) = graph_dir.glob("memory.kuzu.damaged-*")
    assert (aside / "memory.kuzu").is_file()
    reopened = await GraphBackend.open(graph_dir)
    try:
        assert await reopened.count() == len(episodes)
        first_lost = episodes[len(before)]
        hits = await reopened.search(first_lost.name, limit=1)
        assert [hit.episode for hit in hits] == [first_lost]
    finally:
        await reopened.aclose()


async def test_a_rewrite_builds_graphitis_full_text_indexes_again(tmp_path: Path) -> None:
    """Kùzu cannot import several full-text indexes: the rewrite leaves them out and marks
    them stale, and they are built again as after any write."""
    graph_dir = tmp_path / "graph"
    episodes = make_episodes(80)
    graph = await GraphBackend.open(graph_dir)
    try:
        await graph.upsert_many(episodes)
        await graph.build_graphiti_indexes()
    finally:
        await graph.aclose()
    (graph_dir / "memory.kuzu.shadow").touch()  # what a checkpoint cut short leaves

    graph = await GraphBackend.open(graph_dir)
    try:
        assert len(list(graph_dir.glob("memory.kuzu.damaged-*"))) == 1
        assert graph.graphiti_indexes == "stale"
        assert [e async for e in graph.scan()] == sorted(episodes,
                                                        key=lambda e: (e.created_at, e.id))
    finally:
        await graph.aclose()
    reopened = await GraphBackend.open(graph_dir)
    try:
        assert reopened.graphiti_indexes == "fresh"
        assert await reopened.count() == len(episodes)
    finally:
        await reopened.aclose()
