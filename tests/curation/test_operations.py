"""The curation operations on every layer: ids by prefix, update with history, forget and
restore, list's filters, and decisions ended through them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from backends.errors import InvalidEpisode
from backends.model import Episode, now
from curation.conftest import PROJECT
from memory.agent.decisions import Adr, DecisionError, get_adr, record_adr
from memory.agent.memories import AgentMemory
from memory.curation.ids import AmbiguousId, UnknownId
from memory.curation.operations import Curator, NotForgotten


def memory(key: str, text: str, kind: str = "gotcha", **fields: object) -> Episode:
    return Episode.parse(id=key, group_id=PROJECT, kind=kind, name=text[:40], body=text,
                         **fields)


async def test_an_id_is_found_by_a_unique_prefix(curator: Curator) -> None:
    for episode in (memory("abc123", "one"), memory("abd456", "two")):
        await curator.store.upsert(episode)
    assert (await curator.get("abc")).id == "abc123"
    assert (await curator.get("abd456")).body == "two"
    with pytest.raises(AmbiguousId, match=r"'ab' is ambiguous: 2 memories.*abc123, abd456"):
        await curator.get("ab")
    with pytest.raises(UnknownId, match="no memory with id 'zz'"):
        await curator.get("zz")
    with pytest.raises(UnknownId):
        await curator.get("  ")


async def test_an_update_keeps_the_id_and_the_earlier_version(curator: Curator) -> None:
    await curator.store.upsert(memory("m1", "rename is atomic everywhere"))
    updated = await curator.update("m1", body="rename is atomic on one file system",
                                   reason="it is not across mounts")
    assert updated.id == "m1"
    stored = await curator.store.get("m1")
    assert stored is not None and stored.body == "rename is atomic on one file system"
    assert await curator.store.count() == 1
    history = await curator.history("m1")
    assert [(v.change, v.reason, v.episode.body) for v in history.versions] == [
        ("updated", "it is not across mounts", "rename is atomic everywhere")]
    assert history.current is not None and history.current.body == updated.body
    # An update that changes nothing keeps no version.
    await curator.update("m1", body=updated.body)
    assert len((await curator.history("m1")).versions) == 1


async def test_a_forgotten_memory_is_restored_as_it_was(curator: Curator) -> None:
    await curator.store.upsert(memory("secret-1", "the staging password is hunter2"))
    await curator.forget("secret", reason="a secret")
    assert await curator.store.get("secret-1") is None
    with pytest.raises(UnknownId):
        await curator.get("secret-1")
    history = await curator.history("secr")  # a forgotten memory's prefix still names it
    assert history.current is None
    assert [(v.change, v.reason) for v in history.versions] == [("forgotten", "a secret")]
    back = await curator.restore("secr")
    assert (await curator.store.get("secret-1")) == back
    assert back.body == "the staging password is hunter2"
    assert [v.change for v in (await curator.history("secret-1")).versions] == [
        "forgotten", "restored"]
    with pytest.raises(NotForgotten):
        await curator.restore("secret-1")


async def test_list_filters_by_kind_spec_and_time_newest_first(curator: Curator) -> None:
    old = now() - timedelta(days=3)
    await curator.store.upsert(memory("m-old", "old gotcha", created_at=old))
    await curator.store.upsert(memory("m-new", "new pattern", kind="pattern"))
    await AgentMemory(curator.store, PROJECT, "F-7").add_gotcha("spec gotcha")
    assert [e.body for e in await curator.list()][-1] == "old gotcha"
    assert [e.id for e in await curator.list(kinds=["pattern"])] == ["m-new"]
    assert [e.name for e in await curator.list(spec="F-7")] == ["spec gotcha"]
    assert "m-old" not in [e.id for e in await curator.list(since=old + timedelta(hours=1))]
    assert len(await curator.list(limit=1)) == 1
    with pytest.raises(InvalidEpisode):
        await curator.list(limit=0)


async def test_decisions_are_superseded_and_deprecated(curator: Curator) -> None:
    await record_adr(curator.store, PROJECT, Adr(adr_id="ADR-1", title="Cookies",
                                                 decision="sessions in cookies"))
    await curator.supersede_decision("ADR-1", Adr(adr_id="ADR-2", title="Redis",
                                                  decision="sessions in Redis"))
    old = await get_adr(curator.store, PROJECT, "ADR-1")
    assert old is not None and old.superseded_by == "ADR-2" and not old.in_force
    history = await curator.history((await curator.list(kinds=["adr"]))[-1].id)
    assert history.superseded_by == "ADR-2"
    assert history.versions[0].reason == "superseded by ADR-2"
    new_id = next(e.id for e in await curator.list(kinds=["adr"]) if "ADR-2" in e.name)
    ended = await curator.deprecate_decision(new_id[:8])  # by its memory's id prefix
    assert ended.status == "deprecated" and ended.invalid_at is not None
    with pytest.raises(DecisionError, match="already deprecated"):
        await curator.deprecate_decision("ADR-2")
    await curator.store.upsert(memory("g1", "a gotcha"))
    with pytest.raises(DecisionError, match="not a decision"):
        await curator.deprecate_decision("g1")


async def test_entities_and_facts_with_their_validity(curator: Curator, layer: str) -> None:
    await record_adr(curator.store, PROJECT, Adr(adr_id="ADR-1", title="Cookies",
                                                 decision="Keep `SessionStore` in cookies"))
    await curator.supersede_decision("ADR-1", Adr(adr_id="ADR-2", title="Redis",
                                                  decision="Move `SessionStore` to Redis"))
    entities = await curator.entities("SessionStor")  # a typo still finds it
    facts = await curator.facts("SessionStore", retired=True)
    if layer == "file":  # the journal keeps no knowledge graph, and says so
        assert entities.items == [] and facts.items == [] and "no knowledge graph" in (
            entities.reason)
        return
    assert entities.reason == "" and entities.items[0].name == "SessionStore"
    assert entities.items[0].label == "Component"
    governs = {(f.source, f.invalid_at is None) for f in facts.items if f.name == "GOVERNS"}
    assert governs == {("ADR-1", False), ("ADR-2", True)}
    current = await curator.facts("SessionStore")
    assert {(f.source, f.name) for f in current.items if f.name == "GOVERNS"} == {
        ("ADR-2", "GOVERNS")}
    assert (await curator.entities("nothing like it")).items == []


async def test_near_duplicates_are_listed_then_merged_with_history(curator: Curator) -> None:
    old = now() - timedelta(hours=1)
    await curator.store.upsert(memory("dup-1", "Retry flaky calls with backoff.", created_at=old))
    await curator.store.upsert(memory("dup-2", "retry flaky calls, with back-off"))
    await curator.store.upsert(memory("dup-3", "Retry flaky calls with backoff.", kind="pattern"))
    await curator.store.upsert(memory("dup-4", "Cache the token for an hour"))
    listed = await curator.dedupe()
    assert [(d.keep.id, [o.id for o in d.others]) for d in listed] == [("dup-1", ["dup-2"])]
    assert await curator.store.count() == 4  # a dry run merges nothing
    await curator.dedupe(apply=True)
    assert await curator.store.get("dup-2") is None and await curator.store.count() == 3
    [merged] = (await curator.history("dup-2")).versions
    assert (merged.change, merged.into) == ("merged", "dup-1")
    assert (await curator.restore("dup-2")).body == "retry flaky calls, with back-off"
    assert await curator.dedupe() != []  # back again, so listed again
