"""A FalkorDB graph's history read for some memories only, and a contradicted fact retired
again, as on the embedded engines."""

from __future__ import annotations

from pathlib import Path

from falkor_server import address_for
from graph.test_history import history_of_some_memories, retired_again

from backends.graph.falkor.backend import FalkorBackend


async def test_the_history_of_some_memories_is_theirs_alone(tmp_path: Path) -> None:
    graph = await FalkorBackend.open(address_for(tmp_path))
    try:
        await history_of_some_memories(graph)
    finally:
        await graph.aclose()


async def test_a_contradicted_fact_is_retired_again_at_its_memorys_content(
    tmp_path: Path,
) -> None:
    graph = await FalkorBackend.open(address_for(tmp_path))
    try:
        await retired_again(graph)
    finally:
        await graph.aclose()
