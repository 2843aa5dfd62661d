"""LLM enrichment: with an LLM configured, graphiti's own ``add_episode`` extraction runs over
free-text memories, in the background after a write and on ``dualmem enrich``; what it finds
lives beside the deterministic entities (one node per thing), search follows it, a second run
does nothing new, and a failing endpoint costs no memory. The LLM is a scripted OpenAI-compatible
server on 127.0.0.1 driven through graphiti's real client."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends.errors import ProviderFailed
from backends.graph import GraphBackend, remote
from backends.graph.kuzu import engines
from backends.model import Episode
from backends.search.entities import entity_uuid
from graph.enrich_sample import ANSWERS, GROUP, NOTE, OUTCOME, enrich_twice
from graph.old_graph import reading
from graph.scripted_chat import ScriptedChat
from memory import open_memory
from memory.cli import main


@pytest.fixture
def chat() -> Iterator[ScriptedChat]:
    served = ScriptedChat(ANSWERS)
    yield served
    served.close()


async def written(folder: Path, *episodes: Episode) -> None:
    graph = await GraphBackend.open(folder)  # no LLM: the offline default
    await graph.upsert_many(list(episodes))
    assert not await graph.search("Redis", group_ids=[GROUP])
    await graph.aclose()


async def test_enrichment_adds_graphiti_entities_beside_ours(tmp_path: Path,
                                                             chat: ScriptedChat) -> None:
    folder = tmp_path / "graph"
    await written(folder, NOTE, OUTCOME)
    graph = await GraphBackend.open(folder, llm=remote.llm("m", url=chat.url))
    done = await graph.enrich()
    assert (done.enriched, done.skipped, done.facts) == ([NOTE.id], 0, 1)  # not the outcome
    assert [hit.episode.id for hit in await graph.search("Redis", group_ids=[GROUP])] == [NOTE.id]
    asked = len(chat.asked)
    again = await graph.enrich()
    assert (again.enriched, again.skipped, len(chat.asked)) == ([], 1, asked)  # nothing new
    # A memory that later names the LLM's entity links to the same node.
    await graph.upsert(Episode.create(group_id=GROUP, kind="gotcha", name="eviction",
                                      body="`Redis` evicts sessions without maxmemory-policy"))
    await graph.aclose()
    with reading(folder) as rows:
        names = [row[0] for row in rows("MATCH (n:Entity) RETURN n.name")]
        mentions = rows(f"MATCH (e:Episodic {{uuid: '{NOTE.id}'}})-[:MENTIONS]->(n:Entity)"
                        " RETURN n.name")
        redis = rows("MATCH (n:Entity {name: 'Redis'}) RETURN n.uuid, n.labels")
        facts = rows("MATCH (a:Entity)-[:RELATES_TO]->(f:RelatesToNode_)-[:RELATES_TO]->"
                     "(b:Entity) WHERE f.name = 'STORED_IN' RETURN a.name, b.name, f.uuid")
        edges = rows(f"MATCH (e:Episodic {{uuid: '{NOTE.id}'}}) RETURN e.entity_edges")
    assert sorted(names).count("SessionStore") == 1 and names.count("Redis") == 1
    assert sorted(name for [name] in mentions) == ["Redis", "SessionStore"]  # once each
    assert [(key, set(labels)) for key, labels in redis] == [
        (entity_uuid(GROUP, "Component", "Redis"), {"Entity", "Component"})]
    assert [row[:2] for row in facts] == [["SessionStore", "Redis"]]
    assert facts[0][2] in edges[0][0]
    # Reopened: search follows what graphiti linked, from the rows.
    graph = await GraphBackend.open(folder)
    try:
        assert NOTE.id in {h.episode.id for h in await graph.search("Redis", group_ids=[GROUP])}
    finally:
        await graph.aclose()


async def test_a_rewritten_memory_is_enriched_again(tmp_path: Path, chat: ScriptedChat) -> None:
    folder = tmp_path / "graph"
    await written(folder, NOTE)
    graph = await GraphBackend.open(folder, llm=remote.llm("m", url=chat.url))
    try:
        assert (await graph.enrich()).enriched == [NOTE.id]
        await graph.upsert(NOTE.model_copy(update={"body": NOTE.body + " Verified in staging."}))
        done = await graph.enrich()  # or the background did it first: either way, once more
        assert len(done.enriched) + done.skipped == 1
        assert chat.asked.count("ExtractedEntities") == 2
    finally:
        await graph.aclose()


async def test_a_failing_llm_is_named_and_the_store_unharmed(tmp_path: Path,
                                                             chat: ScriptedChat) -> None:
    folder = tmp_path / "graph"
    await written(folder, NOTE, OUTCOME)
    chat.failing = True
    graph = await GraphBackend.open(folder, llm=remote.llm("m", url=chat.url))
    try:
        with pytest.raises(ProviderFailed, match="LLM extraction"):
            await graph.enrich()
        assert await graph.get(NOTE.id) == NOTE
        assert [h.episode.id for h in await graph.search("cookie size", group_ids=[GROUP])] == [
            NOTE.id]
        chat.failing = False
        assert (await graph.enrich()).enriched == [NOTE.id]  # nothing was recorded as done
    finally:
        await graph.aclose()


async def test_writes_are_enriched_in_the_background(tmp_path: Path, chat: ScriptedChat) -> None:
    chat.failing = True
    async with open_memory(tmp_path / "home", "graph", llm=f"m@{chat.url}") as store:
        receipt = await store.upsert(NOTE)  # the write never waits for, or fails with, the LLM
        assert not receipt.pending and await store.get(NOTE.id) == NOTE
        chat.failing = False
        await store.upsert(NOTE)  # due again: the failed round recorded nothing
        for _ in range(400):  # until the background round is done (bounded; no timing)
            if await store.search("Redis", group_ids=[GROUP]):
                break
            await asyncio.sleep(0.05)
        assert [h.episode.id for h in await store.search("Redis", group_ids=[GROUP])] == [NOTE.id]
        assert isinstance(store, GraphBackend)
        assert (await store.enrich()).skipped == 1


async def test_without_an_llm_nothing_is_asked(tmp_path: Path) -> None:
    async with open_memory(tmp_path / "home", "graph") as store:
        await store.upsert(NOTE)
        assert isinstance(store, GraphBackend)
        with pytest.raises(ProviderFailed, match="no LLM is configured"):
            await store.enrich()


def test_the_command_line_enriches_and_resumes(tmp_path: Path, chat: ScriptedChat,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    home = ["--home", str(tmp_path / "home")]
    assert main([*home, "init"]) == 0
    assert main([*home, "add", "--group", GROUP, "--kind", "session_insight", "--name",
                 NOTE.name, "--body", NOTE.body]) == 0
    assert main([*home, "enrich", "--all-groups"]) == 2  # a usage error
    assert "needs an LLM" in capsys.readouterr().err
    llm = ["--llm", f"m@{chat.url}"]
    chat.failing = True
    assert main([*home, *llm, "enrich", "--all-groups"]) == 1
    err = capsys.readouterr().err.strip()
    assert "LLM extraction" in err and len(err.splitlines()) == 1
    chat.failing = False
    enrich_twice(home, llm, capsys)


def test_the_engine_binds_a_missing_parameter_as_the_table_says(tmp_path: Path) -> None:
    """Why the shared driver fills in what graphiti leaves out (enrich.SharedKuzuDriver): Kùzu
    binds a parameter the call leaves out to NULL; LadybugDB refuses the query."""
    module = engines.load(engines.default)
    db = engines.open_database(module, tmp_path / engines.FILES[engines.default])
    connection = module.Connection(db)
    try:
        connection.execute("CREATE NODE TABLE T(u STRING PRIMARY KEY, v TIMESTAMP)")
        query = "MERGE (t:T {u: $u}) SET t.v = $v"
        if engines.NULL_WHEN_MISSING[engines.default]:
            connection.execute(query, {"u": "a"})
        else:
            with pytest.raises(RuntimeError, match="Parameter v not found"):
                connection.execute(query, {"u": "a"})
        connection.execute(query, {"u": "b", "v": None})  # what the driver gives instead
        found = connection.execute("MATCH (t:T) WHERE t.v IS NULL RETURN count(t)")
        assert found.get_all() == [[2 if engines.NULL_WHEN_MISSING[engines.default] else 1]]
        found.close()
    finally:
        connection.close()
        db.close()
