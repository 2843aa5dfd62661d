"""Replaying the file layer into the graph: same fields, idempotent, changes and deletes follow."""

from __future__ import annotations

from pathlib import Path

from backends.graph import GraphBackend
from fallback import FileBackend
from migrate import Ledger, Migrator, dry_run
from migration.migrate_helpers import dump, make_episodes


async def test_replays_every_field_then_a_second_run_writes_nothing(
    files: FileBackend, graph: GraphBackend, ledger: Ledger
) -> None:
    for episode in make_episodes(40):
        await files.upsert(episode)
    migrator = Migrator(files, graph, ledger)

    first = await migrator.run()
    assert (first.written, first.unchanged, first.ok) == (40, 0, True)
    assert await dump(graph) == await dump(files)

    second = await Migrator(files, graph, ledger).run()
    assert (second.written, second.unchanged, second.deleted, second.ok) == (0, 40, 0, True)
    assert await dump(graph) == await dump(files)


async def test_a_changed_episode_is_replayed_again_and_a_delete_follows(
    files: FileBackend, graph: GraphBackend, ledger: Ledger
) -> None:
    first, second, third = make_episodes(3)
    for episode in (first, second, third):
        await files.upsert(episode)
    migrator = Migrator(files, graph, ledger)
    await migrator.run()

    await files.upsert(first.model_copy(update={"body": "rewritten"}))
    await files.delete(second.id)
    # Deleted, then written again: the old tombstone must not delete the new copy.
    await files.delete(third.id)
    await files.upsert(third)
    report = await migrator.run()

    assert (report.written, report.deleted, report.ok) == (1, 1, True)
    assert await dump(graph) == await dump(files)
    assert [t async for t in files.tombstones()] == []


async def test_a_new_empty_target_gets_everything_again(
    tmp_path: Path, files: FileBackend, ledger: Ledger
) -> None:
    for episode in make_episodes(5):
        await files.upsert(episode)
    for folder in ("one", "two"):  # the graph folder was removed between the runs
        graph = await GraphBackend.open(tmp_path / folder)
        try:
            report = await Migrator(files, graph, ledger).run()
            assert report.written == 5 and await graph.count() == 5
        finally:
            await graph.aclose()
    assert report.ledger_reset


async def test_dry_run_reports_and_writes_nothing(
    files: FileBackend, graph: GraphBackend, ledger: Ledger
) -> None:
    for episode in make_episodes(6):
        await files.upsert(episode)
    report = await dry_run(files, ledger)
    assert (report.dry_run, report.written, report.verification) == (True, 6, None)
    assert report.written_by_group == {
        "project-0": 2, "project-1": 2, "project-2": 1, "project-3": 1
    }
    assert await graph.count() == 0
    assert (await Migrator(files, graph, ledger).run()).written == 6


async def test_verification_counts_every_group_and_compares_content_when_asked(
    files: FileBackend, graph: GraphBackend, ledger: Ledger
) -> None:
    episodes = make_episodes(8)
    for episode in episodes:
        await files.upsert(episode)
    migrator = Migrator(files, graph, ledger)
    await migrator.run()

    await graph.delete(episodes[0].id)
    short = (await migrator.run()).verification
    # A group the target holds fewer of is compared by content, whatever was written.
    assert short is not None and not short.clean and short.problems == (episodes[0].id,)

    await graph.upsert(episodes[0])
    await graph.upsert(episodes[1].model_copy(update={"name": "edited in the graph"}))
    await graph.upsert(make_episodes(1, prefix="graph-only")[0])
    by_count = (await migrator.run()).verification
    assert by_count is not None and by_count.clean and not by_count.complete

    report = await migrator.run(hash_all=True)
    result = report.verification
    assert result is not None and result.complete and not result.clean and not report.ok
    assert result.problems == (episodes[1].id,)
    by_group = {check.group_id: check for check in result.groups}
    assert (by_group["project-0"].extra, by_group["project-0"].missing) == (1, 0)
    assert by_group["project-1"].changed == 1
    assert result.to_json()["clean"] is False


async def test_the_file_layer_keeps_its_deletes_until_they_are_forgotten(
    tmp_path: Path, files: FileBackend
) -> None:
    kept, gone = make_episodes(2)
    await files.upsert(kept)
    await files.upsert(gone)
    await files.delete(gone.id)
    await files.bury(["held-only-by-the-graph"])
    assert not await files.delete("never-stored")  # a no-op leaves no tombstone

    reopened = await FileBackend.open(tmp_path / "files")
    try:
        buried = sorted([t.id async for t in reopened.tombstones()])
        assert buried == sorted([gone.id, "held-only-by-the-graph"])
        await reopened.forget_tombstones([gone.id, "unknown"])
        assert [t.id async for t in reopened.tombstones()] == ["held-only-by-the-graph"]
    finally:
        await reopened.aclose()
