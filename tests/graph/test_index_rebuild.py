"""The graph's search index file is a cache of the rows: kept current write by write, across
reopens, a write that died between the graph and the index, and an index or vector file lost
or damaged, it answers exactly as an index built again from the rows."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.graph import GraphBackend
from backends.graph.index import FILE as INDEX_FILE
from backends.graph.vectors import FILE as VECTOR_FILE
from backends.graph.vectors import HEADER
from backends.model import Episode

WORDS = ["graph", "lock", "kuzu", "journal", "index", "agent", "memory", "view", "deadline"]
STEP = st.tuples(
    st.sampled_from(["put", "put", "delete", "reopen", "die after the graph", "lose the index",
                     "damage the index", "lose the vectors", "tear the vectors"]),
    st.integers(0, 4),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
)


def episode(n: int, text: str) -> Episode:
    # g0 holds turns of a conversation (their order is indexed too), g1 notes.
    kind = "dialog_turn" if n % 2 == 0 else "note"
    return Episode.parse(id=f"ep-{n}", group_id=f"g{n % 2}", kind=kind, name=f"memory {n}",
                         body=text, created_at=datetime(2026, 1, 1, tzinfo=UTC)
                         + timedelta(minutes=n))


async def answers(graph: GraphBackend) -> list[object]:
    found: list[object] = [await graph.count()]
    for start in range(0, len(WORDS), 2):
        for groups in (None, ["g0"]):
            hits = await graph.search(" ".join(WORDS[start : start + 2]), group_ids=groups,
                                      limit=20)
            found.append([(hit.episode, round(hit.score, 12)) for hit in hits])
    return found


def forget_index(folder: Path) -> None:
    for leftover in folder.glob(INDEX_FILE + "*"):
        leftover.unlink()


class Died(Exception):
    """The process stopped between committing to the graph and updating the index."""


async def play(folder: Path, steps: list[tuple[str, int, str]]) -> None:
    graph = await GraphBackend.open(folder)
    try:
        for action, n, text in steps:
            if action == "put":
                await graph.upsert(episode(n, text))
            elif action == "delete":
                await graph.delete(f"ep-{n}")
            elif action == "die after the graph":
                core = graph._open_core()
                remember = core.remember

                def died(*_: object) -> None:
                    raise Died

                core.remember = died  # type: ignore[method-assign, assignment]
                with pytest.raises(Died):
                    await graph.upsert(episode(n, text))
                core.remember = remember  # type: ignore[method-assign]
                await graph.aclose()
                graph = await GraphBackend.open(folder)
            else:
                await graph.aclose()
                if action == "lose the index":
                    (folder / INDEX_FILE).unlink()
                elif action == "damage the index":
                    (folder / INDEX_FILE).write_bytes(b"not a database")
                elif action == "lose the vectors":
                    (folder / VECTOR_FILE).unlink()
                elif action == "tear the vectors":
                    os.truncate(folder / VECTOR_FILE, HEADER + 1)
                graph = await GraphBackend.open(folder)
        kept = await answers(graph)
    finally:
        await graph.aclose()
    forget_index(folder)
    rebuilt = await GraphBackend.open(folder)
    try:
        assert await answers(rebuilt) == kept
    finally:
        await rebuilt.aclose()


@settings(deadline=None, max_examples=12)
@given(steps=st.lists(STEP, max_size=10))
def test_an_index_kept_current_answers_as_one_built_from_the_rows(
    steps: list[tuple[str, int, str]],
) -> None:
    root = Path(tempfile.mkdtemp(prefix="dualmem-graph-index-"))
    try:
        asyncio.run(play(root / "graph", steps))
    finally:
        shutil.rmtree(root, ignore_errors=True)
