"""Structure without an LLM: entities named in JSON bodies, linked by MENTIONS, with stable ids;
and the rows are graphiti's own, readable by graphiti's Kùzu driver."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from backends.graph import GraphBackend
from backends.graph.kuzu import engines
from backends.model import Episode
from backends.search.entities import Entity, entity_uuid, extract
from graph.old_graph import reading

DB_FILE = engines.FILES[engines.default]  # the run's engine (tests/conftest.py)


def discovery(key: str, body: dict[str, Any], group_id: str = "proj") -> Episode:
    return Episode.create(group_id=group_id, kind="codebase_discovery", name=key, body=body,
                          key=key)


def named(group_id: str, body: Any) -> list[Entity]:
    episode = Episode.create(group_id=group_id, kind="note", name="n", body=body)
    return extract(episode).entities


def raw(folder: Path, query: str) -> list[list[Any]]:
    """Rows straight from Kùzu, with the backend closed."""
    with reading(folder) as rows:
        return rows(query)


def test_entities_come_from_the_keys_agents_write() -> None:
    body = {
        "files_understood": {"src/app.py": {"purpose": "entry"}, "src/db.py": {}},
        "discovered_files": ["README.md"],
        "patterns_found": [{"name": "retry with backoff", "where": "src/db.py"}],
        "details": {"component": "API gateway", "task_id": 7},
        "feature": "  Dark   mode ",
        "files": [None, True, ""],
        "notes": "file: not a key, only text",
    }
    found = {(e.label, e.name) for e in named("proj", body)}
    assert found == {
        ("File", "src/app.py"), ("File", "src/db.py"), ("File", "README.md"),
        ("Pattern", "retry with backoff"), ("Component", "API gateway"), ("Task", "7"),
        ("Feature", "Dark mode"),
    }
    assert named("proj", "plain text") == []


def test_entity_ids_are_stable_and_scoped_to_the_group() -> None:
    one = named("proj", {"file": "a.py"})[0]
    assert one.uuid == entity_uuid("proj", "File", "a.py")
    assert one.uuid == named("proj", {"files": ["a.py"]})[0].uuid
    assert one.uuid == named("proj", "see `a.py` first")[0].uuid
    assert one.uuid != named("other", {"file": "a.py"})[0].uuid


async def test_rewrites_create_no_duplicates_and_deletes_drop_orphans(tmp_path: Path) -> None:
    folder = tmp_path / "graph"
    graph = await GraphBackend.open(folder)
    first = discovery("first", {"files": ["a.py", "shared.py"], "patterns": ["caching"]})
    second = discovery("second", {"files": ["shared.py"]})
    await graph.upsert_many([first, second])
    await graph.upsert(first)
    await graph.upsert(first.model_copy(update={"body": orjson.dumps(
        {"files": ["a.py", "shared.py"], "patterns": ["caching"]}).decode()}))
    await graph.aclose()
    entities = raw(folder, "MATCH (n:Entity) RETURN n.name, n.labels ORDER BY n.name")
    assert entities == [
        ["a.py", ["Entity", "File"]], ["caching", ["Entity", "Pattern"]],
        ["shared.py", ["Entity", "File"]],
    ]
    mentions = raw(folder, "MATCH (e:Episodic)-[:MENTIONS]->(n:Entity) RETURN e.name, n.name "
                           "ORDER BY e.name, n.name")
    assert mentions == [["first", "a.py"], ["first", "caching"], ["first", "shared.py"],
                        ["second", "shared.py"]]

    graph = await GraphBackend.open(folder)
    await graph.upsert(first.model_copy(update={"body": '{"files": ["b.py"]}'}))
    await graph.delete(second.id)
    await graph.aclose()
    assert raw(folder, "MATCH ()-[m:MENTIONS]->() RETURN count(m)") == [[1]]
    # The facts the rewrite no longer states are history: invalidated, kept with their ends.
    assert raw(folder, "MATCH (f:RelatesToNode_) RETURN count(f), count(f.invalid_at)") == [
        [2, 2]]
    assert raw(folder, "MATCH (n:Entity) RETURN n.name ORDER BY n.name") == [
        ["a.py"], ["b.py"], ["caching"], ["shared.py"]]

    graph = await GraphBackend.open(folder)
    await graph.delete(first.id)
    await graph.aclose()
    for table in ("Entity", "Episodic", "RelatesToNode_"):
        assert raw(folder, f"MATCH (n:{table}) RETURN count(n)") == [[0]]


async def test_graphiti_reads_our_rows_as_its_own(tmp_path: Path) -> None:
    from graphiti_core.driver.kuzu_driver import KuzuDriver
    from graphiti_core.edges import EpisodicEdge
    from graphiti_core.nodes import EntityNode, EpisodeType, EpisodicNode

    folder = tmp_path / "graph"
    graph = await GraphBackend.open(folder)
    structured = discovery("map", {"files": ["src/app.py"], "component": "CLI"})
    text = Episode.create(group_id="proj", kind="gotcha", name="Locks", body="one writer",
                          source="cli")
    await graph.upsert_many([structured, text])
    await graph.aclose()

    driver = KuzuDriver(db=str(folder / DB_FILE))
    try:
        found = await EpisodicNode.get_by_uuids(driver, [structured.id, text.id])
        nodes = {node.uuid: node for node in found}
        entities = await EntityNode.get_by_group_ids(driver, ["proj"])
        edges = await EpisodicEdge.get_by_group_ids(driver, ["proj"])
    finally:
        driver.client.close()
        gc.collect()
        driver.db.close()
    assert nodes[structured.id].source is EpisodeType.json
    assert nodes[text.id].source is EpisodeType.text
    assert nodes[text.id].content == "one writer" and nodes[text.id].source_description == "cli"
    # graphiti needs a valid_at and reads Kùzu's naive UTC; ours stays None on our side.
    assert nodes[text.id].valid_at == text.created_at.replace(tzinfo=None)
    assert {(tuple(e.labels), e.name) for e in entities} == {
        (("Entity", "File"), "src/app.py"), (("Entity", "Component"), "CLI")}
    assert {(e.source_node_uuid, e.target_node_uuid) for e in edges} == {
        (structured.id, entity.uuid) for entity in entities}


FILES = ["src/a.py", "src/b.py", "lib/c.ts", "README.md"]
THINGS = ["PaymentService", "`retry()`", "app.core.auth", "npm test"]


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from(["k1", "k2", "k3"]),
                                st.lists(st.sampled_from(FILES + THINGS), max_size=4)),
                      min_size=1, max_size=6))
async def test_rewriting_never_duplicates_entities_or_facts(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, list[str]]]
) -> None:
    folder = tmp_path_factory.mktemp("graph")
    graph = await GraphBackend.open(folder)
    latest: dict[str, Episode] = {}
    for key, named_things in steps:
        episode = Episode.create(group_id="proj", kind="gotcha", name=key,
                                 body="watch " + " and ".join(named_things), key=key)
        await graph.upsert(episode)
        latest[key] = episode
    await graph.aclose()
    entities = raw(folder, "MATCH (n:Entity) RETURN n.group_id, n.labels[2], n.name")
    assert len(entities) == len({(g, label, name.casefold()) for g, label, name in entities})
    mentions = raw(folder, "MATCH (e:Episodic)-[:MENTIONS]->(n:Entity) RETURN e.uuid, n.uuid")
    expected = {(e.id, entity.uuid) for e in latest.values() for entity in extract(e).entities}
    assert sorted(map(tuple, mentions)) == sorted(expected)
    facts = raw(folder, "MATCH (f:RelatesToNode_) WHERE f.invalid_at IS NULL RETURN f.uuid")
    assert sorted(row[0] for row in facts) == sorted(
        fact.uuid for e in latest.values() for fact in extract(e).facts)


# Bodies a memory can hold (what JSON cannot, e.g. lone surrogates, Episode refuses by name).
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | TEXT,
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(TEXT, inner, max_size=4), max_leaves=12)


@given(kind=st.sampled_from(["adr", "task_outcome", "turn_state", "codebase_discovery",
                             "gotcha"]),
       body=st.fixed_dictionaries({}, optional={
           key: JSON | st.sampled_from([" ", "", "ADR-1"])
           for key in ("adr_id", "supersedes", "title", "task_id", "feature_id", "file",
                       "success", "description")}))
@example(kind="adr", body={"adr_id": " ", "supersedes": " "})
def test_extraction_takes_any_structured_body(kind: str, body: dict[str, Any]) -> None:
    """Blank or odd ids (an ADR whose id is " ", say) name nothing; they never fail a write."""
    episode = Episode.create(group_id="proj", kind=kind, name="n", body=body)
    found = extract(episode)
    assert all(e.name.strip() for e in found.entities)
    known = {e.uuid for e in found.entities}
    assert all(f.source in known and f.target in known for f in found.facts)


async def test_a_reopened_graph_links_through_its_episode_index(tmp_path: Path) -> None:
    # At open the links read the mentions from the rows and ask the episode index where each
    # episode lives: a search naming an entity reaches the memories that mention it, within
    # the group and kind asked for, before and after a reopen, and after a delete.
    folder = tmp_path / "graph"
    graph = await GraphBackend.open(folder)
    mentioning = discovery("cache layer", {"files": ["src/cache.py"]})
    elsewhere = discovery("cache layer", {"files": ["src/cache.py"]}, group_id="other")
    # Lexically the better match (every word, many times), but it mentions no entity.
    wordy = Episode.create(group_id="proj", kind="note", name="src cache py",
                           body="src cache py, src cache py, src cache py")
    await graph.upsert_many([mentioning, elsewhere, wordy])

    async def found(kinds: list[str] | None = None) -> list[str]:
        hits = await graph.search("`src/cache.py`", group_ids=["proj"], kinds=kinds)
        return [hit.episode.id for hit in hits]

    assert await found() == [mentioning.id, wordy.id]
    await graph.aclose()
    graph = await GraphBackend.open(folder)
    try:
        assert await found() == [mentioning.id, wordy.id]
        assert await found(kinds=["note"]) == [wordy.id]
        await graph.delete(mentioning.id)
        assert await found() == [wordy.id]
    finally:
        await graph.aclose()
