"""What graphiti's LLM extraction found survives a graph rebuilt from the journal: the holder
keeps it in the journal's ``enriched.jsonl`` and gives it back to a graph made from the journal
without asking the LLM (which need not be configured any more); a memory rewritten since is
enriched again instead. The LLM is the scripted OpenAI-compatible server of the graph tests."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from graph.enrich_sample import ANSWERS, GROUP, NOTE, OUTCOME
from graph.old_graph import reading
from graph.scripted_chat import ScriptedChat
from hypothesis import given
from hypothesis import strategies as st

from backends.graph.history import Enrichment, KeptFact
from backends.model import Episode
from backends.search.entities import Entity
from fallback import kept_log
from memory.store.config import Config
from memory.store.dual import DualBackend
from memory.store.selection import open_memory


@pytest.fixture
def chat() -> Iterator[ScriptedChat]:
    served = ScriptedChat(ANSWERS)
    yield served
    served.close()


async def enriched(home: Path, chat: ScriptedChat) -> None:
    async with open_memory(home, "auto", llm=f"m@{chat.url}") as store:
        assert isinstance(store, DualBackend) and store.holds_graph
        await store.upsert_many([NOTE, OUTCOME])
        done = await store.enrich()
        assert done.enriched + [NOTE.id] * done.skipped == [NOTE.id]  # or the background did


async def linked_to_redis(home: Path) -> list[str]:
    """The memories graph search reaches through "Redis", which only the LLM named."""
    async with open_memory(home, "auto") as store:  # no LLM configured now
        assert isinstance(store, DualBackend) and store.holds_graph
        await store.catch_up()
        return [hit.episode.id for hit in await store.search("Redis", group_ids=[GROUP])]


def stored_in(home: Path) -> tuple[list[list[str]], list[list[str]]]:
    """The LLM's fact, and the summary graphiti wrote of the entity only it found."""
    with reading(Config(home=home).graph_dir) as rows:
        return ([row[:2] for row in rows(
            "MATCH (a:Entity)-[:RELATES_TO]->(f:RelatesToNode_)-[:RELATES_TO]->(b:Entity)"
            " WHERE f.name = 'STORED_IN' RETURN a.name, b.name, f.uuid")],
            rows("MATCH (n:Entity {name: 'Redis'}) RETURN n.uuid, n.summary"))


async def test_a_rebuilt_graph_gets_the_enrichment_back_without_the_llm(
    tmp_path: Path, chat: ScriptedChat
) -> None:
    config = Config(home=tmp_path)
    await enriched(tmp_path, chat)
    [kept] = kept_log.read(config.files_dir / "enriched.jsonl", Enrichment.from_json)
    assert kept.episode == NOTE.id
    assert {entity.name for entity in kept.mentions} == {"Redis"}  # ours has SessionStore
    assert [(f.source.name, f.name, f.target.name) for f in kept.facts] == [
        ("SessionStore", "STORED_IN", "Redis")]
    asked = len(chat.asked)
    facts, redis = stored_in(tmp_path)
    assert facts == [["SessionStore", "Redis"]] and redis[0][1]

    shutil.rmtree(config.graph_dir)
    assert await linked_to_redis(tmp_path) == [NOTE.id]
    assert await linked_to_redis(tmp_path) == [NOTE.id]  # nothing doubled on the next open
    assert stored_in(tmp_path) == (facts, redis)
    async with open_memory(tmp_path, "auto", llm=f"m@{chat.url}") as store:
        assert isinstance(store, DualBackend)
        again = await store.enrich()
    assert (again.enriched, again.skipped, len(chat.asked)) == ([], 1, asked)  # not asked
    lines = config.files_dir.joinpath("enriched.jsonl").read_bytes().splitlines()
    assert len(lines) == 1


async def test_a_memory_rewritten_since_is_not_given_the_old_enrichment(
    tmp_path: Path, chat: ScriptedChat
) -> None:
    config = Config(home=tmp_path)
    await enriched(tmp_path, chat)
    async with open_memory(tmp_path, "auto") as store:  # rewritten with no LLM to enrich it
        await store.upsert(NOTE.model_copy(update={"body": "Sessions live in signed cookies."}))
    shutil.rmtree(config.graph_dir)
    assert await linked_to_redis(tmp_path) == []
    async with open_memory(tmp_path, "auto", llm=f"m@{chat.url}") as store:
        assert isinstance(store, DualBackend)
        again = await store.enrich()
    assert len(again.enriched) + again.skipped == 1 and again.facts in (0, 1)
    assert chat.asked.count("ExtractedEntities") == 2  # the new content was asked about


async def test_damaged_lines_are_skipped_and_the_rest_restored(
    tmp_path: Path, chat: ScriptedChat, caplog: pytest.LogCaptureFixture
) -> None:
    config = Config(home=tmp_path)
    await enriched(tmp_path, chat)
    path = config.files_dir / "enriched.jsonl"
    line = b'{"episode": "x", "group_id": "g", "digest": "d", "mentions": [%s], "facts": []}\n'
    hostile = b'{"uuid": "u", "label": "X` DETACH DELETE n //", "name": "n"}'  # query text
    path.write_bytes(b'{"episode": 1}\n' + line % b'{"uuid": 2}' + line % hostile
                     + path.read_bytes() + b'{"episode": "torn')
    shutil.rmtree(config.graph_dir)
    with caplog.at_level(logging.WARNING, logger="memory.store.kept_log"):
        assert await linked_to_redis(tmp_path) == [NOTE.id]
    warned = {r.getMessage().split(": skipped", 1)[0].rsplit(":", 1)[1] for r in caplog.records
              if ": skipped (" in r.getMessage()}
    assert warned == {"1", "2", "3", "5"}


T0 = datetime(2024, 5, 1, 8, 0, tzinfo=UTC)
# A task outcome older than the note, whose fact the LLM reads the note to contradict.
OLDER = Episode.create(group_id=GROUP, kind="task_outcome", name="T-0 ok", key="T-0",
                       created_at=T0, body={"task_id": "T-0", "success": True, "metadata": {
                           "files_modified": ["src/auth/session.py"]}})
CONTRADICTING = {
    "ExtractedEntities": {"extracted_entities": [
        {"name": "T-0", "entity_type_id": 0},
        {"name": "src/auth/session.py", "entity_type_id": 0}]},
    "ExtractedEdges": {"edges": [
        {"source_entity_name": "T-0", "target_entity_name": "src/auth/session.py",
         "relation_type": "FAILED_ON", "fact": "T-0 failed on src/auth/session.py"}]},
    "EdgeDuplicate": {"duplicate_facts": [], "contradicted_facts": [0]},
    "EdgeTimestamps": {"valid_at": "2026-06-01T00:00:00Z", "invalid_at": None},
}


def facts_of(home: Path, episode: Episode) -> list[list[object]]:
    """The facts ``episode`` states, with their times."""
    with reading(Config(home=home).graph_dir) as rows:
        return rows(f"MATCH (f:RelatesToNode_) WHERE f.episodes[1] = '{episode.id}'"
                    " RETURN f.uuid, f.invalid_at, f.expired_at ORDER BY f.uuid")


async def rebuilt(home: Path) -> None:
    shutil.rmtree(Config(home=home).graph_dir)
    async with open_memory(home, "auto") as store:  # no LLM configured now
        assert isinstance(store, DualBackend) and store.holds_graph
        await store.catch_up()


async def test_a_fact_the_llm_found_contradicted_stays_retired_in_a_rebuilt_graph(
    tmp_path: Path,
) -> None:
    chat = ScriptedChat(CONTRADICTING)
    try:
        async with open_memory(tmp_path, "auto", llm=f"m@{chat.url}") as store:
            assert isinstance(store, DualBackend)
            await store.upsert_many([OLDER, NOTE])
            await store.enrich()
    finally:
        chat.close()
    [(uuid, invalid_at, expired_at)] = live = facts_of(tmp_path, OLDER)
    assert invalid_at == datetime(2026, 6, 1) and expired_at is not None  # graphiti's doing
    await rebuilt(tmp_path)
    assert facts_of(tmp_path, OLDER) == live
    # A rewrite that states it again makes it current, in the graph and in one rebuilt since;
    # so does one back to the content it was contradicted at.
    for content in (OLDER.model_copy(update={"name": "T-0 ok, checked"}), OLDER):
        async with open_memory(tmp_path, "auto") as store:
            await store.upsert(content)
        assert facts_of(tmp_path, OLDER) == [[uuid, None, None]]
        await rebuilt(tmp_path)
        assert facts_of(tmp_path, OLDER) == [[uuid, None, None]]


names = st.text(min_size=1, max_size=12)
entities = st.builds(Entity, names, st.sampled_from(["Entity", "Component", "File"]), names)
times = st.datetimes(min_value=datetime(1970, 1, 2), timezones=st.just(UTC))
facts = st.builds(KeptFact, uuid=names, episode=st.just("e"), group_id=st.just("g"),
                  name=names, fact=st.text(max_size=40), created_at=times, valid_at=times,
                  invalid_at=st.none() | times, expired_at=st.none() | times,
                  source=entities, target=entities)
enrichments = st.builds(Enrichment, episode=names, group_id=names, digest=names,
                        mentions=st.lists(entities, max_size=3).map(tuple),
                        facts=st.lists(facts, max_size=3).map(tuple))


@given(st.lists(enrichments, max_size=4))
def test_enrichments_read_back_as_written(tmp_path_factory: pytest.TempPathFactory,
                                          written: list[Enrichment]) -> None:
    path = tmp_path_factory.mktemp("kept") / "enriched.jsonl"
    kept_log.append(path, written)
    assert kept_log.read(path, Enrichment.from_json) == written
