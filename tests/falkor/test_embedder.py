"""A server's graph keeps the embedder its first opener recorded: another is refused, and
openers of a new graph at once all agree on one record."""

from __future__ import annotations

import asyncio
from pathlib import Path

import falkordb
import pytest
from falkor_server import address_for

from backends.errors import BackendUnavailable
from backends.graph.embedder import HashingEmbedder
from backends.graph.falkor.backend import FalkorBackend


async def test_another_embedder_is_refused(tmp_path: Path) -> None:
    address = address_for(tmp_path)
    await (await FalkorBackend.open(address)).aclose()
    with pytest.raises(BackendUnavailable) as refused:
        await FalkorBackend.open(address, embedder=HashingEmbedder(dimension=64))
    assert refused.value.reason == "embedder mismatch"
    assert "/64" in refused.value.detail
    await (await FalkorBackend.open(address)).aclose()  # the recorded one still opens


async def test_openers_of_a_new_graph_at_once_all_open_it(tmp_path: Path) -> None:
    # Before, one could read the record half made by another (the name, not yet the
    # dimension) and refuse the graph as another embedder's.
    address = address_for(tmp_path)
    opened = await asyncio.gather(*(FalkorBackend.open(address) for _ in range(8)),
                                  return_exceptions=True)
    for graph in opened:
        if isinstance(graph, FalkorBackend):
            await graph.aclose()
    assert [type(graph) for graph in opened] == [FalkorBackend] * 8, opened


async def test_a_record_half_made_is_completed(tmp_path: Path) -> None:
    # As an opener killed between the two writes it once made left it.
    address = address_for(tmp_path)
    assert address.socket is not None
    client = falkordb.FalkorDB(unix_socket_path=address.socket)
    try:
        client.select_graph(address.graph).query(
            "CREATE (:DualmemMeta {key: 'embedder', value: $name})",
            {"name": HashingEmbedder().name})
    finally:
        client.connection.close()
    await (await FalkorBackend.open(address)).aclose()
    with pytest.raises(BackendUnavailable, match="embedder mismatch"):
        await FalkorBackend.open(address, embedder=HashingEmbedder(dimension=64))
