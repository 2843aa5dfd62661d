"""Properties: replaying the file layer gives a graph that holds exactly what the files hold,
and replaying again changes nothing, whatever upserts and deletes came before."""

from __future__ import annotations

import asyncio
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.graph import GraphBackend
from backends.model import Episode
from fallback import FileBackend
from migrate import Ledger, Migrator
from migration.migrate_helpers import dump

IDS = [f"mem-{n}" for n in range(5)]
START = datetime(2026, 1, 1, tzinfo=UTC)

text = st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=24).filter(
    str.strip
)
moments = st.integers(0, 10**9).map(lambda us: START + timedelta(microseconds=us * 997))
episodes = st.builds(
    Episode,
    id=st.sampled_from(IDS),
    group_id=st.sampled_from(["alpha", "beta_2"]),
    kind=st.sampled_from(["pattern", "gotcha", "turn_state"]),
    name=text,
    body=st.one_of(text, st.just('{"files": ["src/a.py"], "pattern": "repository"}')),
    created_at=moments,
    valid_at=st.none() | moments,
    invalid_at=st.none() | moments,
)
operations = st.lists(st.one_of(episodes, st.sampled_from(IDS)), max_size=8)


async def apply(files: FileBackend, steps: list[Episode | str]) -> None:
    for step in steps:
        if isinstance(step, Episode):
            await files.upsert(step)
        else:
            await files.delete(step)


async def scenario(root: Path, before: list[Episode | str], after: list[Episode | str]) -> None:
    files = await FileBackend.open(root / "files")
    graph = await GraphBackend.open(root / "graph")
    ledger = Ledger.open(root / "ledger.sqlite3")
    try:
        migrator = Migrator(files, graph, ledger)
        await apply(files, before)
        assert (await migrator.run()).ok
        once = await dump(graph)
        assert once == await dump(files)

        again = await Migrator(files, graph, ledger).run()
        assert (again.written, again.deleted) == (0, 0)
        assert await dump(graph) == once

        await apply(files, after)
        assert (await migrator.run()).ok
        assert await dump(graph) == await dump(files)
    finally:
        ledger.close()
        await graph.aclose()
        await files.aclose()


# A graph is opened per example: few, slow examples.
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=operations, after=operations)
def test_the_graph_holds_exactly_what_the_files_hold(
    before: list[Episode | str], after: list[Episode | str]
) -> None:
    with tempfile.TemporaryDirectory() as root:
        asyncio.run(scenario(Path(root), before, after))
