"""On a server, each process keeps its search current with what the others write: episodes,
entities and facts (retired ones included), learnt from the change feed."""

from __future__ import annotations

from pathlib import Path

from falkor_server import address_for

from backends.graph.falkor.backend import FalkorBackend
from backends.model import Episode
from memory import Adr, record_adr, supersede_adr

PROJECT = "shop"


def outcome(task: str, files: list[str]) -> Episode:
    return Episode.create(group_id=PROJECT, kind="task_outcome", name=f"{task} done",
                          body={"task_id": task, "success": True, "outcome": "done",
                                "metadata": {"files_modified": files}}, key=task)


async def test_another_connection_sees_entities_facts_and_deletes(tmp_path: Path) -> None:
    address = address_for(tmp_path)
    writer = await FalkorBackend.open(address)
    reader = await FalkorBackend.open(address)  # a second client, as another process is
    try:
        written = outcome("T-7", ["src/billing/invoice.py"])
        await writer.upsert(written)
        # Found through the entity the query names (the file), though no word of the body is
        # in the query: the reader learnt the mention from the feed.
        hits = await reader.search("invoice", group_ids=[PROJECT])
        assert [hit.episode.id for hit in hits] == [written.id]

        await record_adr(writer, PROJECT, Adr(adr_id="ADR-1", title="Sessions in cookies",
                                              decision="Keep `SessionStore` in cookies"))
        await supersede_adr(writer, PROJECT, "ADR-1", Adr(
            adr_id="ADR-2", title="Sessions in Redis", decision="Move `SessionStore` to Redis"))
        current = await reader.search("SessionStore", group_ids=[PROJECT])
        assert current[0].episode.name.startswith("ADR-2")
        assert await reader.get(current[0].episode.id) == current[0].episode

        assert await writer.delete(written.id)
        assert await reader.search("invoice", group_ids=[PROJECT]) == []
        assert await reader.get(written.id) is None
        rows = await reader.connection.run("MATCH (n:Entity {name: 'src/billing/invoice.py'}) "
                                 "RETURN count(n) AS n")
        assert rows[0]["n"] == 0  # the entity went with the last memory naming it
    finally:
        await writer.aclose()
        await reader.aclose()


async def test_a_rewrite_retires_the_facts_it_no_longer_states(tmp_path: Path) -> None:
    graph = await FalkorBackend.open(address_for(tmp_path))
    try:
        await record_adr(graph, PROJECT, Adr(adr_id="ADR-1", title="Cache",
                                             decision="`CacheLayer` governs `PriceService`"))
        await record_adr(graph, PROJECT, Adr(adr_id="ADR-1", title="Cache",
                                             decision="`CacheLayer` governs `StockService`"))
        facts = await graph.connection.run(
            "MATCH (a:Entity)-[r:RELATES_TO]->(b:Entity) WHERE r.name = 'GOVERNS' "
            "RETURN b.name AS target, r.invalid_at AS invalid_at")
        by_target = {row["target"]: row["invalid_at"] for row in facts}
        assert by_target["StockService"] is None
        assert by_target["PriceService"] is not None  # history, not erased
    finally:
        await graph.aclose()
