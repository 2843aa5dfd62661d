"""Ids of one character, and ids that are words a full-text index skips (``a``, ``is``, ``the``:
graphiti creates the ``Episodic`` index with such stopwords), are stored and read back on a real
server. Looking them up with ``e.uuid IN [...]`` killed FalkorDB 4.16.3 (a segfault in
``QueryNode_AddChildren``), so the lookup goes by one key at a time."""

from __future__ import annotations

import string
from datetime import UTC, datetime

from falkor_server import FalkorServer

from backends.graph.falkor.backend import FalkorBackend
from backends.model import Episode

STOPWORDS = ("a", "an", "and", "is", "it", "of", "the", "to", "with")
"""some of graphiti's (``graphiti_core.driver.falkordb.STOPWORDS``)"""
IDS = sorted({*string.ascii_letters, *string.digits, *STOPWORDS})


def memory(episode_id: str) -> Episode:
    return Episode.parse(id=episode_id, group_id="g", kind="note", name=f"memory {episode_id}",
                         body=f"a memory whose id is {episode_id}",
                         created_at=datetime(2026, 1, 2, tzinfo=UTC))


async def test_short_and_stopword_ids_are_stored_and_read_back() -> None:
    server = FalkorServer()  # its own: a server this kills takes no other test with it
    try:
        store = await FalkorBackend.open(server.address("short"))
        try:
            await store.upsert(memory("a"))
            await store.upsert(memory("b"))
            assert await store.get("a") == memory("a")
            await store.upsert_many([memory(i) for i in IDS])
            for episode_id in IDS:
                assert await store.get(episode_id) == memory(episode_id), episode_id
            assert await store.count() == len(IDS)
            assert await store.delete("is")
            assert await store.get("is") is None
        finally:
            await store.aclose()
        assert server.process.poll() is None
    finally:
        server.stop()


async def test_another_process_reads_short_and_stopword_ids_it_did_not_write() -> None:
    """Another process learns of them from the change feed (``Mirror.sync``), and loads their
    links by key."""
    server = FalkorServer()  # its own, as above
    try:
        reader = await FalkorBackend.open(server.address("short"))
        writer = await FalkorBackend.open(server.address("short"))
        try:
            await writer.upsert_many([memory(i) for i in IDS])
            assert await reader.ids_starting("i") == ["i", "is", "it"]
            assert await reader.count() == len(IDS)
        finally:
            await writer.aclose()
            await reader.aclose()
        assert server.process.poll() is None
    finally:
        server.stop()
