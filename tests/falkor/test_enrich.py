"""LLM enrichment on a FalkorDB server: graphiti's own ``add_episode`` through its FalkorDriver
gives the same entities and facts, under the same ids, as on the embedded graph, read back with
graphiti's own APIs; our episode stays ours (graphiti's save keeps our properties), every
process learns what was linked, and the record on the server spares a second run. The LLM is
the scripted OpenAI-compatible stand-in (tests/graph/scripted_chat.py)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from falkor_server import FalkorServer, address_for
from graph.enrich_sample import ANSWERS, GROUP, NOTE, OUTCOME, enrich_twice
from graph.scripted_chat import ScriptedChat

from backends.errors import ProviderFailed, WriteFailed
from backends.graph import GraphBackend, remote
from backends.graph.address import ServerAddress
from backends.graph.falkor.backend import FalkorBackend
from backends.graph.kuzu import engines
from backends.search.entities import entity_uuid
from memory.cli import main
from memory.store.dual import DualBackend
from memory.store.selection import open_memory

Seen = tuple[set[tuple[str, str, frozenset[str]]], set[tuple[str, str, str, str]],
             dict[str, set[str]]]
"""what graphiti reads: entities (id, name, labels), facts (source, target, name, fact) and
each episode's MENTIONS (episode -> entity names)"""


@pytest.fixture
def chat() -> Iterator[ScriptedChat]:
    served = ScriptedChat(ANSWERS)
    yield served
    served.close()


async def graphiti_reads(driver: Any) -> Seen:
    from graphiti_core.edges import EntityEdge, EpisodicEdge
    from graphiti_core.nodes import EntityNode

    entities = await EntityNode.get_by_group_ids(driver, [GROUP])
    names = {node.uuid: node.name for node in entities}
    facts = await EntityEdge.get_by_group_ids(driver, [GROUP])
    mentions: dict[str, set[str]] = {}
    for edge in await EpisodicEdge.get_by_group_ids(driver, [GROUP]):
        mentions.setdefault(edge.source_node_uuid, set()).add(names[edge.target_node_uuid])
    return ({(n.uuid, n.name, frozenset(n.labels)) for n in entities},
            {(f.source_node_uuid, f.target_node_uuid, f.name, f.fact) for f in facts}, mentions)


async def on_falkordb(address: ServerAddress) -> Seen:
    from falkordb.asyncio import FalkorDB
    from graphiti_core.driver.falkordb_driver import FalkorDriver

    driver = FalkorDriver(falkor_db=FalkorDB(unix_socket_path=address.socket),
                          database=address.graph)
    try:
        return await graphiti_reads(driver)
    finally:
        await driver.close()


async def embedded(folder: Path) -> Seen:
    from graphiti_core.driver.kuzu_driver import KuzuDriver

    driver = KuzuDriver(db=str(folder / engines.FILES[engines.default]))
    try:
        return await graphiti_reads(driver)
    finally:
        driver.client.close()
        gc.collect()
        driver.db.close()


async def test_falkordb_gives_what_the_embedded_graph_gives(tmp_path: Path,
                                                            chat: ScriptedChat) -> None:
    address, folder = address_for(tmp_path), tmp_path / "graph"
    llm = remote.llm("m", url=chat.url)
    for graph in (await FalkorBackend.open(address), await GraphBackend.open(folder)):
        await graph.upsert_many([NOTE, OUTCOME])  # no LLM: the offline default
        await graph.aclose()
    reports = []
    for graph in (await FalkorBackend.open(address, llm=llm),
                  await GraphBackend.open(folder, llm=llm)):
        try:
            reports.append(await graph.enrich())
            assert [h.episode.id for h in await graph.search("Redis", group_ids=[GROUP])] == [
                NOTE.id]
            assert await graph.get(NOTE.id) == NOTE  # graphiti's save kept our properties
            assert await graph.count() == 2
        finally:
            await graph.aclose()
    assert [(r.enriched, r.skipped, r.entities, r.facts) for r in reports] == [
        ([NOTE.id], 0, 2, 1)] * 2

    server, kuzu = await on_falkordb(address), await embedded(folder)
    assert server == kuzu
    entities, facts, mentions = server
    ids = {name: key for key, name, _ in entities}
    assert [name for _, name, _ in entities].count("SessionStore") == 1
    assert (ids["Redis"], "Redis", frozenset({"Entity", "Component"})) in entities
    assert ids["Redis"] == entity_uuid(GROUP, "Component", "Redis")  # our extractor's id
    assert (ids["SessionStore"], ids["Redis"], "STORED_IN",
            "SessionStore keeps sessions in Redis") in facts
    assert mentions[NOTE.id] == {"SessionStore", "Redis"}  # once each


async def test_every_process_sees_it_and_none_does_it_twice(tmp_path: Path,
                                                            chat: ScriptedChat) -> None:
    address = address_for(tmp_path)
    llm = remote.llm("m", url=chat.url)
    first = await FalkorBackend.open(address, llm=llm)
    second = await FalkorBackend.open(address, llm=llm)  # as another process
    try:
        await second.upsert_many([NOTE, OUTCOME])
        await second.enricher.stop()  # the writer's own background round, not wanted here
        done = await first.enrich()
        assert done.enriched == [NOTE.id]
        # Learnt from the change feed: the other connection follows graphiti's entity.
        assert [h.episode.id for h in await second.search("Redis", group_ids=[GROUP])] == [
            NOTE.id]
        asked = len(chat.asked)
        again = await second.enrich()  # the record is the server's
        assert (again.enriched, again.skipped, len(chat.asked)) == ([], 1, asked)
        # A rewrite is due again, and only it.
        await first.upsert(NOTE.model_copy(update={"body": NOTE.body + " Verified."}))
        await first.enricher.stop()
        assert (await second.enrich()).enriched == [NOTE.id]
    finally:
        await first.aclose()
        await second.aclose()


async def test_two_processes_at_once_ask_the_llm_once(tmp_path: Path,
                                                     chat: ScriptedChat) -> None:
    address = address_for(tmp_path)
    llm = remote.llm("m", url=chat.url)
    writer = await FalkorBackend.open(address)
    await writer.upsert_many([NOTE, OUTCOME])
    await writer.aclose()
    both = [await FalkorBackend.open(address, llm=llm) for _ in range(2)]  # two processes
    try:
        reports = await asyncio.gather(*(graph.enrich() for graph in both))
        assert sorted(r.enriched for r in reports) == [[], [NOTE.id]]  # one did it
        assert chat.asked.count("ExtractedEntities") == 1
        again = await both[0].enrich()  # the lease was given back; the record says done
        assert (again.enriched, again.skipped) == ([], 1)
    finally:
        for graph in both:
            await graph.aclose()


async def test_the_lease_is_one_process_s_at_a_time(tmp_path: Path) -> None:
    """Claimed at once by two processes, each time on a new graph, it is won once each time (a
    Cypher MERGE was won by both about one time in five); its holder may claim it again (a
    claim cut short leaves it set), and it is free once given back."""
    from backends.graph.falkor.enrich import FalkorPlace

    for n in range(20):
        address = address_for(tmp_path / str(n))
        both = [await FalkorBackend.open(address) for _ in range(2)]
        places = [FalkorPlace(graph.connection, graph.mirror, graph.kept) for graph in both]
        try:
            won = await asyncio.gather(*(place.claim(NOTE) for place in places))
            assert sorted(won) == [False, True]
            holder = places[won.index(True)]
            assert await holder.claim(NOTE)
            await holder.release(NOTE)
            assert await places[won.index(False)].claim(NOTE)
        finally:
            for graph in both:
                await graph.aclose()


async def test_a_server_restarted_empty_gets_the_enrichment_back(tmp_path: Path,
                                                                 chat: ScriptedChat) -> None:
    """Under ``auto`` the journal's ``enriched.jsonl`` gives the replayed graph what graphiti
    had found, as graphiti reads it, without asking the LLM again."""
    socket = tmp_path / "falkor.sock"
    address = ServerAddress("team", socket=str(socket))
    server = await asyncio.to_thread(FalkorServer, socket=socket)
    try:
        async with open_memory(tmp_path / "home", "auto", graph_url=str(address),
                               llm=f"m@{chat.url}") as store:
            assert isinstance(store, DualBackend)
            await store.upsert_many([NOTE, OUTCOME])
            await store.enrich()
        before = await on_falkordb(address)
        asked = len(chat.asked)
        server.stop()
        server = await asyncio.to_thread(FalkorServer, socket=socket)  # nothing kept

        async with open_memory(tmp_path / "home", "auto", graph_url=str(address)) as store:
            assert isinstance(store, DualBackend)
            await store.catch_up()
            assert [h.episode.id for h in await store.search("Redis", group_ids=[GROUP])] == [
                NOTE.id]
        assert await on_falkordb(address) == before
        assert len(chat.asked) == asked
    finally:
        server.stop()


async def test_writes_are_enriched_in_the_background(tmp_path: Path, chat: ScriptedChat) -> None:
    graph = await FalkorBackend.open(address_for(tmp_path), llm=remote.llm("m", url=chat.url))
    try:
        chat.failing = True
        receipt = await graph.upsert(NOTE)  # the write never waits for, or fails with, the LLM
        assert not receipt.pending and await graph.get(NOTE.id) == NOTE
        await graph.enricher.stop()  # the client's retries could outlast the failure
        chat.failing = False
        await graph.upsert(NOTE.model_copy(update={"name": "sessions moved"}))
        for _ in range(400):  # until the background round is done (bounded; no timing)
            if await graph.search("Redis", group_ids=[GROUP]):
                break
            await asyncio.sleep(0.05)
        assert [h.episode.id for h in await graph.search("Redis", group_ids=[GROUP])] == [NOTE.id]
        assert (await graph.enrich()).skipped == 1
    finally:
        await graph.aclose()


async def test_a_failing_llm_is_named_and_the_graph_unharmed(tmp_path: Path,
                                                             chat: ScriptedChat) -> None:
    address = address_for(tmp_path)
    graph = await FalkorBackend.open(address)
    await graph.upsert_many([NOTE, OUTCOME])
    with pytest.raises(ProviderFailed, match="no LLM is configured"):
        await graph.enrich()
    await graph.aclose()
    chat.failing = True
    graph = await FalkorBackend.open(address, llm=remote.llm("m", url=chat.url))
    try:
        with pytest.raises(ProviderFailed, match="LLM extraction"):
            await graph.enrich()
        assert await graph.get(NOTE.id) == NOTE
        chat.failing = False
        assert (await graph.enrich()).enriched == [NOTE.id]  # nothing was recorded as done
    finally:
        await graph.aclose()


async def test_a_server_gone_mid_extraction_is_the_graph_s_failure(tmp_path: Path,
                                                                   chat: ScriptedChat) -> None:
    own = FalkorServer(socket=tmp_path / "falkor.sock")
    address = own.address("g")
    graph = await FalkorBackend.open(address, llm=remote.llm("m", url=chat.url))
    try:
        await graph.upsert_many([NOTE, OUTCOME])
        await graph.enricher.stop()

        def gone(messages: Any) -> Any:
            own.stop()  # while graphiti waits for the LLM: its next query finds no server
            return ANSWERS["ExtractedEdges"]

        chat.answers["ExtractedEdges"] = gone
        with pytest.raises(WriteFailed, match="unreachable"):  # not the LLM's failure
            await graph.enrich()
    finally:
        own.stop()
        await graph.aclose()


def test_the_command_line_enriches_a_server_graph(tmp_path: Path, chat: ScriptedChat,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    server = ["--home", str(tmp_path / "home"), "--graph-url", str(address_for(tmp_path))]
    assert main([*server, "init"]) == 0
    assert main([*server, "add", "--group", GROUP, "--kind", "session_insight", "--name",
                 NOTE.name, "--body", NOTE.body]) == 0
    enrich_twice(server, ["--llm", f"m@{chat.url}"], capsys)
