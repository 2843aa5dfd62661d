"""A graph's history (retired facts) read from one embedded graph and written on another, as
``dualmem migrate --to`` carries it: as it was, beside its episode, once."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from backends.graph import GraphBackend
from backends.graph.history import KeptFact, compare, digest, dump_history, load_history
from backends.graph.protocol import Graph
from backends.model import Episode
from backends.search.entities import Entity

T0 = datetime(2024, 5, 1, 8, 0, tzinfo=UTC)


def discovery(files: list[str]) -> Episode:
    return Episode.create(group_id="proj", kind="codebase_discovery", name="discovery",
                          key="d", body={"files": files}, created_at=T0)


async def test_a_rewrites_history_moves_to_another_graph_once(graph: GraphBackend,
                                                              tmp_path: Path) -> None:
    await graph.upsert(discovery(["src/a.py", "src/b.py"]))
    latest = discovery(["src/a.py", "src/c.py"])
    await graph.upsert(latest)
    retired = await graph.retired_facts()
    assert len(retired) == 1 and "src/b.py" in (retired[0].source.name, retired[0].target.name)
    assert retired[0].invalid_at is not None and retired[0].episode == latest.id

    target = await GraphBackend.open(tmp_path / "target")
    try:
        await target.upsert(latest)  # what the journal's replay writes
        assert await target.retired_facts() == []
        assert await target.keep_history(retired) == 1
        assert await target.keep_history(retired) == 0  # idempotent
        assert await target.retired_facts() == retired
        assert compare(retired, [latest.id], await target.retired_facts(), 0).ok
        # The episode keeps it: a later rewrite keeps it retired, a delete takes it.
        await target.upsert(discovery(["src/d.py"]))
        assert {fact.uuid for fact in await target.retired_facts()} >= {retired[0].uuid}
        await target.delete(latest.id)
        assert await target.retired_facts() == []
    finally:
        await target.aclose()


async def test_facts_of_a_memory_the_target_lacks_are_left_and_reported(
    graph: GraphBackend, tmp_path: Path
) -> None:
    await graph.upsert(discovery(["src/a.py", "src/b.py"]))
    await graph.upsert(discovery(["src/a.py"]))
    retired = await graph.retired_facts()
    target = await GraphBackend.open(tmp_path / "target")
    try:
        assert await target.keep_history(retired) == 0
        report = compare(retired, [], await target.retired_facts(), 0)
        assert report.ok and report.orphaned == len(retired) == 1
    finally:
        await target.aclose()


def test_a_fact_missing_on_the_target_fails_the_report() -> None:
    fact = retired_fact("f", T0)
    report = compare([fact], [fact.episode], [], 0)
    assert not report.ok and "1 MISSING" in report.summary()


def retired_fact(key: str, at: datetime, invalid: datetime | None = None,
                 content: str = "") -> KeptFact:
    return KeptFact(uuid=key, episode="e", group_id="g", name="MENTIONS", fact=f"fact {key}",
                       created_at=at, valid_at=at, invalid_at=invalid, expired_at=at,
                       source=Entity("a", "File", "src/a.py"), target=Entity("b", "Pattern", "b"),
                       digest=content)


times = st.datetimes(timezones=st.just(UTC))


@given(st.lists(st.builds(retired_fact, st.text(), times, st.none() | times, st.text()),
                max_size=5))
def test_retired_facts_cross_a_process_as_they_are(facts: list[KeptFact]) -> None:
    back = load_history(dump_history(facts))
    assert back == facts
    assert [(f.source, f.target, f.digest) for f in back] == [
        (f.source, f.target, f.digest) for f in facts]


async def test_a_contradicted_fact_is_retired_again_at_its_memorys_content(
    graph: GraphBackend,
) -> None:
    await retired_again(graph)


async def retired_again(graph: Graph) -> None:
    """A kept retirement of a fact its memory states (graphiti's extraction of another memory
    contradicted it) holds while the memory is at the content it was retired at; a rewrite
    since restates the fact. On every engine (tests/falkor runs it on a server)."""
    first, second = discovery(["src/a.py", "src/b.py"]), discovery(["src/a.py"])
    await graph.upsert(first)
    await graph.upsert(second)
    [kept] = await graph.retired_facts()
    assert kept.digest == digest(second)  # the content it was retired at
    await graph.upsert(first)  # states the fact again
    assert await graph.retired_facts() == []
    assert await graph.keep_history([kept]) == 0  # restated since it was retired
    assert await graph.retired_facts() == []
    contradicted = replace(kept, digest=digest(first))
    assert await graph.keep_history([contradicted]) == 1
    assert await graph.retired_facts() == [contradicted]
    assert await graph.keep_history([contradicted]) == 0  # once


async def test_the_history_of_some_memories_is_theirs_alone(graph: GraphBackend) -> None:
    await history_of_some_memories(graph)


async def history_of_some_memories(graph: Graph) -> None:
    """What a write retired is read without reading the whole history (dual._save_history);
    on every engine (tests/falkor runs it on a server)."""
    others = [Episode.create(group_id="proj", kind="codebase_discovery", name=f"other {n}",
                             key=f"o{n}", body={"files": [f"src/o{n}.py", "src/x.py"]},
                             created_at=T0) for n in range(3)]
    for episode in [discovery(["src/a.py", "src/b.py"]), *others]:
        await graph.upsert(episode)
    await graph.upsert(latest := discovery(["src/a.py", "src/c.py"]))
    for episode in others:
        await graph.upsert(episode.model_copy(update={"body": '{"files": ["src/y.py"]}'}))
    everything = await graph.retired_facts()
    mine = await graph.retired_facts([latest.id])
    assert len(everything) == 4 and [fact.episode for fact in mine] == [latest.id]
    assert mine == [fact for fact in everything if fact.episode == latest.id]
    assert await graph.retired_facts([others[0].id, "no-such-memory"]) == [
        fact for fact in everything if fact.episode == others[0].id]
    assert await graph.retired_facts([]) == []
