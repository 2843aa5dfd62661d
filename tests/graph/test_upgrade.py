"""A graph written by an older dualmem (schema version 1: entities from JSON keys under other
ids, no facts) is brought up to date when it is opened: the same entities, mentions and facts
as a graph written today, in bounded batches that resume after an interruption."""

from __future__ import annotations

from pathlib import Path

import pytest
from coding_corpus import GROUP, project

from backends.graph import GraphBackend
from backends.graph.kuzu import upgrade
from backends.graph.kuzu.database import SCHEMA_VERSION
from backends.model import Episode
from backends.protocol import BatchUpsert
from graph.old_graph import snapshot, write_version_1
from memory import open_memory
from memory.store.config import Config

DATA = project()
LINKS = ("entities", "mentions", "facts", "edges")


async def written_today(folder: Path, episodes: list[Episode]) -> dict[str, object]:
    graph = await GraphBackend.open(folder)
    await graph.upsert_many(episodes)
    await graph.aclose()
    return snapshot(folder)


async def rankings(graph: GraphBackend) -> list[list[str]]:
    return [[hit.episode.id for hit in await graph.search(q.text, group_ids=[GROUP])]
            for q in DATA.questions]


async def test_an_old_graph_is_upgraded_at_open(tmp_path: Path) -> None:
    today = await written_today(tmp_path / "today", DATA.memories)
    await write_version_1(tmp_path / "old", DATA.memories)
    before = snapshot(tmp_path / "old")
    assert before["facts"] == set() and before["entities"]
    seen: list[tuple[int, int]] = []
    graph = await GraphBackend.open(tmp_path / "old", progress=lambda *step: seen.append(step))
    upgraded = await rankings(graph)
    await graph.aclose()
    graph = await GraphBackend.open(tmp_path / "today")
    assert upgraded == await rankings(graph)
    await graph.aclose()

    after = snapshot(tmp_path / "old")
    for part in LINKS:
        assert after[part] == today[part], part
    # Entities whose ids changed (names now folded) are gone, not left beside the new ones.
    renamed = {row[0] for row in before["entities"]} - {row[0] for row in after["entities"]}
    assert renamed
    assert ("schema_version", str(SCHEMA_VERSION)) in after["meta"]
    assert upgrade.CURSOR not in {key for key, _ in after["meta"]}
    assert seen[-1] == (len(DATA.memories), len(DATA.memories))
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


class Stop(Exception):
    """Stands for the process being killed during an upgrade."""


async def test_an_interrupted_upgrade_resumes(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upgrade, "BATCH", 40)
    today = await written_today(tmp_path / "today", DATA.memories)
    await write_version_1(tmp_path / "old", DATA.memories)

    def stop_after_two(done: int, total: int) -> None:
        if done >= 80:
            raise Stop

    with pytest.raises(Stop):
        await GraphBackend.open(tmp_path / "old", progress=stop_after_two)
    halfway = dict(snapshot(tmp_path / "old")["meta"])
    assert halfway["schema_version"] == "1" and halfway[upgrade.CURSOR]
    seen: list[tuple[int, int]] = []
    graph = await GraphBackend.open(tmp_path / "old", progress=lambda *step: seen.append(step))
    await graph.aclose()
    assert seen[-1][1] == len(DATA.memories) - 80  # the rest only
    after = snapshot(tmp_path / "old")
    for part in LINKS:
        assert after[part] == today[part], part


async def test_an_old_graph_read_only_is_searched_through_entities(tmp_path: Path) -> None:
    await written_today(tmp_path / "today", DATA.memories)
    await write_version_1(tmp_path / "old", DATA.memories)
    graph = await GraphBackend.open(tmp_path / "old", read_only=True)
    found = await rankings(graph)
    await graph.aclose()
    graph = await GraphBackend.open(tmp_path / "today")
    assert found == await rankings(graph)
    await graph.aclose()
    assert ("schema_version", "1") in snapshot(tmp_path / "old")["meta"]  # left as it was


async def test_a_home_made_the_old_way_is_upgraded(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with open_memory(home, "auto") as store:
        assert isinstance(store, BatchUpsert)
        await store.upsert_many(DATA.memories)
    journal = {key: value for key, value in snapshot(Config(home=home).graph_dir)["meta"]
               if key.startswith("journal_")}
    # The same home as version 1 left it: its graph rewritten the old way, at the same position.
    for path in (Config(home=home).graph_dir).iterdir():
        path.unlink()
    await write_version_1(Config(home=home).graph_dir, DATA.memories, journal)
    component = next(q for q in DATA.questions if q.kind == "component")
    async with open_memory(home, "auto") as store:
        hits = await store.search(component.text, group_ids=[GROUP])
    assert component.relevant <= {hit.episode.id for hit in hits}
    assert snapshot(Config(home=home).graph_dir)["facts"]
