"""ADRs (create, supersede, deprecate) and failed approaches (repeats are counted)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from backends.model import stable_id
from backends.protocol import MemoryBackend
from memory.agent.decisions import (
    Adr,
    DecisionError,
    deprecate_adr,
    get_adr,
    list_adrs,
    list_failed_approaches,
    record_adr,
    record_failed_approach,
    supersede_adr,
)
from memory.agent.memories import AgentMemory
from memory.agent.scopes import ADR, FAILED_APPROACH

PROJECT = "proj-1"


async def test_supersede_ends_the_old_adr_and_links_both(store: MemoryBackend) -> None:
    first = Adr(adr_id="ADR-001", title="Store memory in files", decision="JSON files")
    await record_adr(store, PROJECT, first)
    assert await get_adr(store, PROJECT, "ADR-001") == first
    second = Adr(adr_id="ADR-002", title="Store memory in a graph", decision="Kuzu")
    await supersede_adr(store, PROJECT, "ADR-001", second)
    old, new = await get_adr(store, PROJECT, "ADR-001"), await get_adr(store, PROJECT, "ADR-002")
    assert old is not None and new is not None
    assert (old.status, old.superseded_by, new.supersedes) == ("superseded", "ADR-002", "ADR-001")
    episode = await store.get(stable_id(PROJECT, ADR, "ADR-001"))
    assert episode is not None and episode.invalid_at == old.invalid_at is not None
    in_force = await list_adrs(store, PROJECT, in_force_only=True)
    assert [adr.adr_id for adr in in_force] == ["ADR-002"]
    assert await store.count(group_ids=[PROJECT], kinds=[ADR]) == 2
    with pytest.raises(DecisionError, match="already superseded"):
        await supersede_adr(store, PROJECT, "ADR-001", second)


async def test_deprecate_ends_an_adr_without_a_successor(store: MemoryBackend) -> None:
    await record_adr(store, PROJECT, Adr(adr_id="ADR-007", title="Use tabs", decision="Tabs"))
    ended = await deprecate_adr(store, PROJECT, "ADR-007", "the formatter decides")
    assert (ended.status, ended.deprecation_reason, ended.in_force) == (
        "deprecated", "the formatter decides", False
    )
    assert await get_adr(store, PROJECT, "ADR-007") == ended
    with pytest.raises(DecisionError, match="no ADR 'ADR-404'"):
        await deprecate_adr(store, PROJECT, "ADR-404", "gone")


async def test_a_repeated_failed_approach_is_counted(store: MemoryBackend) -> None:
    first = await record_failed_approach(
        store, PROJECT, "Mock the database in integration tests",
        symptom="tests pass, production fails", root_cause="mocks drift from the schema",
        prevention="use a real database in a tmp folder", severity="medium",
    )
    assert first.occurrence_count == 1
    again = await record_failed_approach(
        store, PROJECT, "mock the database  in integration tests!",
        symptom="migration broke in production", severity="high",
    )
    assert (again.occurrence_count, again.severity) == (2, "high")
    assert again.root_cause == "mocks drift from the schema"  # kept when not given again
    assert again.symptom == "migration broke in production"
    assert again.first_seen == first.first_seen
    assert await store.count(group_ids=[PROJECT], kinds=[FAILED_APPROACH]) == 1
    third = await record_failed_approach(
        store, PROJECT, "Mock the database in integration tests", symptom="x", severity="low"
    )
    assert (third.occurrence_count, third.severity) == (3, "high")
    assert await list_failed_approaches(store, PROJECT) == [third]


async def test_imported_failed_approaches_are_listed(store: MemoryBackend) -> None:
    # A session's ``what_failed`` item carries its spec and session and no times of its own.
    agent = AgentMemory(store, PROJECT, "001-refunds")
    await agent.save_session_insights(2, {
        "timestamp": "2026-11-23T06:38:21+00:00",
        "what_failed": ["Posting ledger entries outside the refund transaction"],
    })
    await record_failed_approach(store, PROJECT, "Retry forever", symptom="hangs")
    listed = {f.approach: f for f in await list_failed_approaches(store, PROJECT)}
    imported = listed["Posting ledger entries outside the refund transaction"]
    assert (imported.spec, imported.session, imported.symptom) == (
        "001-refunds", 2, "failed in session 2")
    assert imported.first_seen == imported.last_seen == datetime(2026, 11, 23, 6, 38, 21,
                                                                  tzinfo=UTC)
    assert listed["Retry forever"].spec is None
