"""File memory is deleted only when asked (prune), and only after a clean verification."""

from __future__ import annotations

import pytest

from backends.errors import MigrationError
from backends.graph import GraphBackend
from fallback import FileBackend
from migrate import Ledger, Migrator, prune
from migration.migrate_helpers import dump, make_episodes


async def test_prune_refuses_what_is_not_verified_and_deletes_nothing(
    files: FileBackend, graph: GraphBackend, ledger: Ledger
) -> None:
    episodes = make_episodes(6)
    for episode in episodes:
        await files.upsert(episode)
    before = await dump(files)

    with pytest.raises(MigrationError, match="not yet migrated"):
        await prune(files, graph, ledger)
    await Migrator(files, graph, ledger).run()
    assert await dump(files) == before  # migrating never deletes file memory

    await graph.upsert(episodes[2].model_copy(update={"body": "changed in the graph"}))
    with pytest.raises(MigrationError, match="verification FAILED"):
        await prune(files, graph, ledger)
    assert await dump(files) == before


async def test_prune_after_a_clean_verification_keeps_the_graph_whole(
    files: FileBackend, graph: GraphBackend, ledger: Ledger
) -> None:
    for episode in make_episodes(6):
        await files.upsert(episode)
    await Migrator(files, graph, ledger).run()
    in_graph = await dump(graph)

    assert await prune(files, graph, ledger) == 6
    assert await files.count() == 0
    # The deletes prune made are not replayed into the graph.
    report = await Migrator(files, graph, ledger).run()
    assert (report.written, report.deleted) == (0, 0)
    assert await dump(graph) == in_graph

    # A memory pruned and written again is an ordinary memory: its next delete is replayed.
    again = make_episodes(1)[0]
    await files.upsert(again)
    await files.delete(again.id)
    assert (await Migrator(files, graph, ledger).run()).deleted == 1
    assert await graph.get(again.id) is None
