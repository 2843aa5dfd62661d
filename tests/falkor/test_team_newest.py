"""A team's stores read the newest first as they scan (``newest_property``): the one-shot view
(the copy of the server's graph merged with this home's changes the server lacks: new,
rewritten and deleted memories; the journal alone when the server does not answer), and the
dual store holding the server's graph (which holds the team's memories, the journal only this
home's) or not reaching it."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from falkor_server import address_for
from hypothesis import given, settings
from hypothesis import strategies as st
from newest_property import FILTERS, MEMORY, Memory, check_newest, memory

from backends.graph.address import parse_server_url
from backends.graph.falkor.backend import FalkorBackend
from fallback import FileBackend
from memory.store.config import Config
from memory.store.dual import open_dual
from memory.store.selection import open_backend
from memory.store.team_view import TeamView

UNANSWERED = parse_server_url("redis+unix:///nonexistent/falkor.sock?graph=team")
WHERE = ["team", "held", "mine", "rewritten", "deleted"]
"""a teammate's; this home's, through the server; this home's, in its journal alone; this
home's through the server, then rewritten, or deleted, in its journal alone"""
HELD = ("held", "rewritten", "deleted")
Change = tuple[Memory, str, Memory]  # (the team's version, where, this home's version)


async def compare(root: Path, changes: list[Change], kinds: list[str], limit: int) -> None:
    address, home = address_for(root), root / "home"
    team = await FalkorBackend.open(address)  # a teammate, writing the server's graph
    try:
        await team.upsert_many([memory(n, *theirs) for n, (theirs, where, _) in
                                enumerate(changes) if where == "team"])
    finally:
        await team.aclose()
    dual = await open_dual(Config(home, graph_url=address))
    try:  # this home, holding the server's graph: the team's memories beside its own
        await dual.upsert_many([memory(n, *theirs) for n, (theirs, where, _) in
                                enumerate(changes) if where in HELD])
        await dual.catch_up()
        assert dual.holds_graph
        await check_newest(dual, kinds, limit)
    finally:
        await dual.aclose()
    journal = await FileBackend.open(Config(home).files_dir, watch=False)
    try:  # this home's changes, made while the server was away: pending
        await journal.upsert_many([memory(n, *mine) for n, (_, where, mine) in
                                   enumerate(changes) if where in ("mine", "rewritten")])
        for n, (_, where, _) in enumerate(changes):
            if where == "deleted":
                assert await journal.delete(f"ep-{n:02d}")
    finally:
        await journal.aclose()
    away = await open_dual(Config(home, graph_url=UNANSWERED))
    try:
        await check_newest(away, kinds, limit)
    finally:
        await away.aclose()
    for url, layer in ((address, "graph"), (UNANSWERED, "file")):
        view, selection = await open_backend(Config(home, graph_url=url), one_shot=True)
        try:
            assert isinstance(view, TeamView) and selection.layer == layer
            await check_newest(view, kinds, limit)
        finally:
            await view.aclose()


@settings(deadline=None, max_examples=8)
@given(changes=st.lists(st.tuples(MEMORY, st.sampled_from(WHERE), MEMORY), max_size=40),
       **FILTERS)
def test_a_teams_stores_read_the_newest_as_they_scan(
        changes: list[Change], kinds: list[str], limit: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="dualmem-team-newest-"))
    try:
        asyncio.run(compare(root, changes, kinds, limit))
    finally:
        shutil.rmtree(root, ignore_errors=True)
