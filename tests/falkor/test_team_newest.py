"""A team's one-shot view reads the newest first as it scans (``newest_property``): the copy
of the server's graph merged with this home's changes the server lacks (rewritten, new and
deleted memories), and the journal alone when the server does not answer."""

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
from memory.store.selection import open_backend
from memory.store.team_view import TeamView

UNANSWERED = parse_server_url("redis+unix:///nonexistent/falkor.sock?graph=team")
WHERE = ["team", "mine", "both", "deleted"]
"""on the server alone; in the journal alone; on the server and rewritten in the journal;
on the server, and written and deleted in the journal"""
Change = tuple[Memory, str, Memory]  # (the team's version, where, this home's version)


async def compare(root: Path, changes: list[Change], kinds: list[str], limit: int) -> None:
    address, home = address_for(root), root / "home"
    team = await FalkorBackend.open(address)  # a teammate, writing the server's graph
    try:
        await team.upsert_many([memory(n, *theirs) for n, (theirs, where, _) in
                                enumerate(changes) if where != "mine"])
    finally:
        await team.aclose()
    journal = await FileBackend.open(Config(home).files_dir, watch=False)
    try:  # this home's changes, made while the server was away: pending
        await journal.upsert_many([memory(n, *mine) for n, (_, where, mine) in
                                   enumerate(changes) if where != "team"])
        for n, (_, where, _) in enumerate(changes):
            if where == "deleted":
                assert await journal.delete(f"ep-{n:02d}")
    finally:
        await journal.aclose()
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
def test_the_team_views_newest_read_is_its_scan_reversed(
        changes: list[Change], kinds: list[str], limit: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="dualmem-team-newest-"))
    try:
        asyncio.run(compare(root, changes, kinds, limit))
    finally:
        shutil.rmtree(root, ignore_errors=True)
