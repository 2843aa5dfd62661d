"""A FalkorDB graph's history read for some memories only, as on the embedded engines."""

from __future__ import annotations

from pathlib import Path

from falkor_server import address_for

from backends.graph.falkor import FalkorBackend
from tests.graph.test_history import history_of_some_memories


async def test_the_history_of_some_memories_is_theirs_alone(tmp_path: Path) -> None:
    graph = await FalkorBackend.open(address_for(tmp_path))
    try:
        await history_of_some_memories(graph)
    finally:
        await graph.aclose()
