"""A long-running process holding a team's graph (the dual store on a FalkorDB server) names a
teammate's memory by a prefix of its id: the server's graph holds the team's memories, this
home's journal only its own. The id-prefix property (``ids_property``) holds on the server's
graph layer, on the dual store holding it, and on the dual store not reaching it."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from falkor_server import address_for
from hypothesis import given, settings
from ids_property import ASKED, STORED, check_ids, memories, prefixes

from backends.graph.address import parse_server_url
from backends.graph.falkor.backend import FalkorBackend
from backends.model import Episode
from backends.protocol import MemoryBackend
from memory.curation.ids import resolve
from memory.store.config import Config
from memory.store.dual import DualBackend, open_dual

UNANSWERED = parse_server_url("redis+unix:///nonexistent/falkor.sock?graph=team")
Team = tuple[asyncio.Runner, FalkorBackend, DualBackend, DualBackend]


@pytest.fixture(scope="module")
def team() -> Iterator[Team]:
    """A teammate writing the server's graph, this home's dual store holding it, and the dual
    store of another home that does not reach the server (its journal alone)."""
    with tempfile.TemporaryDirectory() as folder, asyncio.Runner() as runner:
        root = Path(folder)
        address = address_for(root)
        mate = runner.run(FalkorBackend.open(address))
        dual = runner.run(open_dual(Config(root / "home", graph_url=address)))
        away = runner.run(open_dual(Config(root / "away", graph_url=UNANSWERED)))
        try:
            runner.run(dual.catch_up())
            assert dual.holds_graph
            yield runner, mate, dual, away
        finally:
            for store in (away, dual, mate):
                runner.run(store.aclose())


def test_a_teammates_memory_is_named_by_a_prefix(team: Team) -> None:
    runner, mate, dual, _ = team
    runner.run(mate.upsert(Episode.parse(id="teammate-7f3a", group_id="g1", kind="note",
                                         name="theirs", body="a teammate's memory")))
    assert runner.run(resolve(dual, "teammate-7f")) == "teammate-7f3a"
    assert runner.run(resolve(dual, "teammate-7f", group_ids=["g1"])) == "teammate-7f3a"


@settings(deadline=None, max_examples=15)
@given(theirs=STORED, mine=STORED, **ASKED)
def test_ids_by_prefix_agree_with_a_scan_on_a_team(
    team: Team, theirs: list[tuple[str, str]], mine: list[tuple[str, str]], picked: int,
    cut: int, other: str, groups: list[str] | None,
) -> None:
    runner, mate, dual, away = team
    if theirs:
        runner.run(mate.upsert_many(memories(theirs)))
    if mine:
        runner.run(dual.upsert_many(memories(mine)))
        runner.run(away.upsert_many(memories(mine)))
    asked = prefixes(theirs + mine, picked, cut, other)
    stores: tuple[MemoryBackend, ...] = (dual, away)
    for store in stores:
        runner.run(check_ids(store, asked, groups))
