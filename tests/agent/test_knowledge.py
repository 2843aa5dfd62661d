"""System knowledge: the shipped defaults, seeding, resolution with and without a store, and
per-project overrides (the seed document's test list)."""

from __future__ import annotations

import uuid
from importlib import resources
from pathlib import Path

import pytest
from every_layer import open_layer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.model import Episode, stable_id
from backends.protocol import MemoryBackend
from memory.agent.knowledge import (
    gate_thresholds,
    project_overrides,
    resolve_role_constraints,
    suggest_implementation_mode,
    system_knowledge,
)
from memory.agent.scopes import ROLE_CONSTRAINTS, ROLE_CONSTRAINTS_GROUP, SYSTEM_GROUPS
from seeds import (
    SEED_GROUP,
    KnowledgeError,
    builtin_knowledge,
    load_overrides,
    seed_project_overview,
    seed_system_knowledge,
    seeded_version,
)

PLAYER = builtin_knowledge().roles["player"]
OVERRIDES = """\
roles:
  player:
    must_do_additions: [Run the linters before handing over]
    ask_before_additions: [Adding a database migration]
  coach:
    escalate_when_additions: [The build is red on main]
quality_gates:
  feature:
    "4-6": {coverage_threshold: 0.75}
"""


async def _maybe_seed(store: MemoryBackend | None) -> None:
    if store is not None:
        await seed_system_knowledge(store)


def test_data_files_ship_inside_the_package() -> None:
    data = resources.files("seeds").joinpath("data")
    names = {entry.name for entry in data.iterdir()}
    assert {"role_constraints.yaml", "quality_gates.yaml", "implementation_modes.yaml"} <= names


def test_defaults_hold_what_the_issue_lists() -> None:
    knowledge = builtin_knowledge()
    assert set(knowledge.roles) == {"player", "coach"}
    player, coach = knowledge.roles["player"], knowledge.roles["coach"]
    assert (len(player.must_do), len(player.must_not_do), len(player.ask_before)) == (4, 4, 3)
    assert (len(coach.must_do), len(coach.must_not_do), len(coach.escalate_when)) == (4, 3, 3)
    assert any("3 attempts" in item for item in coach.escalate_when)
    gates = {
        gate.key: (gate.arch_review_threshold, gate.coverage_threshold, gate.tests_required)
        for gate in knowledge.gates
    }
    assert gates == {
        "QG-scaffolding-1-10": (None, None, False),
        "QG-feature-1-3": (50, 0.70, True),
        "QG-feature-4-6": (60, 0.80, True),
        "QG-feature-7-10": (70, 0.85, True),
        "QG-testing-1-10": (None, 0.90, True),
        "QG-documentation-1-10": (None, None, False),
    }
    modes = {mode.key: (mode.complexity, mode.ceremony_level) for mode in knowledge.modes}
    assert modes == {
        "MODE-direct": ((1, 3), "minimal"),
        "MODE-task_work": ((3, 7), "standard"),
        "MODE-autobuild": ((5, 10), "full"),
    }
    assert all(m.invocation_method and m.result_location_pattern and m.state_recovery_strategy
               and m.when_to_use and m.pitfalls for m in knowledge.modes)


async def test_role_defaults_without_overrides(maybe_store: MemoryBackend | None) -> None:
    await _maybe_seed(maybe_store)
    player = await resolve_role_constraints("player", maybe_store)
    assert player == PLAYER
    assert "Write tests for the code you add or change" in player.must_do
    coach = await resolve_role_constraints("coach", maybe_store)
    assert "Write or modify implementation code" in coach.must_not_do


async def test_unknown_role_and_bad_complexity_are_named_errors(
    maybe_store: MemoryBackend | None,
) -> None:
    with pytest.raises(KnowledgeError, match="unknown role 'reviewer'"):
        await resolve_role_constraints("reviewer", maybe_store)
    for complexity in (0, 11):
        with pytest.raises(KnowledgeError, match="complexity"):
            await gate_thresholds("feature", complexity, maybe_store)


async def test_fallback_when_no_store_an_unseeded_or_an_unreadable_one(
    store: MemoryBackend,
) -> None:
    assert await system_knowledge(None) == builtin_knowledge()
    assert await system_knowledge(store) == builtin_knowledge()
    assert (await gate_thresholds("feature", 5, store)).key == "QG-feature-4-6"
    await seed_system_knowledge(store)
    await store.aclose()  # every read now raises BackendUnavailable
    assert await resolve_role_constraints("coach", store) == builtin_knowledge().roles["coach"]


async def test_gate_profile_for_feature_5(maybe_store: MemoryBackend | None) -> None:
    await _maybe_seed(maybe_store)
    gate = await gate_thresholds("feature", 5, maybe_store)
    assert gate.key == "QG-feature-4-6"
    assert (gate.arch_review_threshold, gate.coverage_threshold) == (60, 0.80)
    assert gate.tests_required and gate.arch_review_required
    # Aliases and unknown task types are judged by the feature profiles.
    assert (await gate_thresholds("implementation", 2, maybe_store)).key == "QG-feature-1-3"
    assert (await gate_thresholds("something-new", 9, maybe_store)).key == "QG-feature-7-10"
    assert (await gate_thresholds("docs", 9, maybe_store)).key == "QG-documentation-1-10"


async def test_fallback_equals_seeded_values(store: MemoryBackend) -> None:
    report = await seed_system_knowledge(store)
    assert len(report.created) == len(builtin_knowledge().items()) + 1  # and the seed version
    assert await system_knowledge(store) == await system_knowledge(None)
    stored = [ep async for ep in store.scan(group_ids=SYSTEM_GROUPS)]
    expected = {item.to_episode("system_seeding").id for item in builtin_knowledge().items()}
    assert {ep.id for ep in stored} == expected
    assert await seeded_version(store) == builtin_knowledge().version()


async def test_mode_suggestions(maybe_store: MemoryBackend | None) -> None:
    await _maybe_seed(maybe_store)
    suggested = {
        c: (await suggest_implementation_mode("feature", c, maybe_store)).name for c in range(1, 11)
    }
    assert suggested[2] == "direct"
    assert suggested[7] == "autobuild"
    # Overlaps: 3 is in direct and task_work, 5-6 in task_work and autobuild.
    assert (suggested[3], suggested[5], suggested[6]) == ("direct", "task_work", "task_work")
    advice = await suggest_implementation_mode("feature", 7, maybe_store)
    assert "feature plan" in advice.text
    # Autobuild is not open to documentation: the nearest open mode instead.
    assert (await suggest_implementation_mode("docs", 9, maybe_store)).name == "task_work"


@pytest.mark.parametrize("task_type", ["feature", "testing", "docs", "scaffolding", "odd"])
async def test_no_suggestion_error_without_a_store(task_type: str) -> None:
    for complexity in range(1, 11):
        suggestion = await suggest_implementation_mode(task_type, complexity)
        low, high = suggestion.mode.complexity
        assert suggestion.text.startswith("Suggested mode:")
        # Only autobuild is closed to some types; then the nearest open range serves.
        closed = task_type in ("docs", "scaffolding") and complexity > 7
        assert low <= complexity <= high or closed


KEYS = [item.key for item in builtin_knowledge().items()]


# One fresh store per example: tmp_path is shared by the examples, the folder in it is not.
@settings(
    max_examples=5,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    times=st.integers(min_value=2, max_value=4),
    stale=st.sets(st.sampled_from(KEYS), max_size=4),
    foreign=st.sets(st.sampled_from(KEYS), max_size=2),
)
async def test_reseed_is_idempotent(
    layer: str, tmp_path: Path, times: int, stale: set[str], foreign: set[str]
) -> None:
    """Whatever the store held before (older seeded defaults, someone's own versions), the
    first seeding settles it and every later one creates and rewrites nothing."""
    stale -= foreign
    items = {item.key: item for item in builtin_knowledge().items()}
    async with open_layer(layer, tmp_path / uuid.uuid4().hex) as store:
        for key in stale | foreign:
            episode = items[key].to_episode("system_seeding" if key in stale else "cli")
            await store.upsert(episode.model_copy(update={"body": episode.body + " "}))
        first = await seed_system_knowledge(store)
        assert set(first.updated) == stale
        assert set(first.kept) == foreign
        assert len(first.created) == len(KEYS) + 1 - len(stale | foreign)
        snapshot = {ep.id: ep.content_hash() async for ep in store.scan()}
        for _ in range(times - 1):
            again = await seed_system_knowledge(store)
            assert again.written == 0
            assert {ep.id: ep.content_hash() async for ep in store.scan()} == snapshot
        assert await store.count() == len(KEYS) + 1


async def test_changed_defaults_update_in_place(store: MemoryBackend) -> None:
    await seed_system_knowledge(store)
    player_id = PLAYER.to_episode("system_seeding").id
    before = await store.get(player_id)
    count = await store.count()
    changed_player = PLAYER.model_copy(update={"must_do": (*PLAYER.must_do, "Keep commits small")})
    changed = builtin_knowledge().model_copy(
        update={"roles": {**builtin_knowledge().roles, "player": changed_player}}
    )
    report = await seed_system_knowledge(store, changed)
    assert report.updated == ["ROLE-player", "seed-version"]
    assert await store.count() == count
    after = await store.get(player_id)
    assert before is not None and after is not None
    assert after.created_at == before.created_at and "Keep commits small" in after.body
    assert await seeded_version(store) == changed.version() != builtin_knowledge().version()
    assert (await resolve_role_constraints("player", store)).must_do[-1] == "Keep commits small"


async def test_stored_knowledge_outranks_builtin_and_overrides_outrank_both(
    store: MemoryBackend, tmp_path: Path
) -> None:
    custom = PLAYER.model_copy(update={"must_do": ("Only this",)})
    await store.upsert(custom.to_episode("cli"))  # someone's own version, not seeding's
    report = await seed_system_knowledge(store)
    assert "ROLE-player" in report.kept
    assert (await resolve_role_constraints("player", store)).must_do == ("Only this",)
    (tmp_path / "entity-overrides.yaml").write_text(OVERRIDES)
    merged = await resolve_role_constraints("player", store, project_overrides(tmp_path))
    assert merged.must_do == ("Only this", "Run the linters before handing over")


async def test_override_file_merged_additions_extend_not_replace(
    maybe_store: MemoryBackend | None, tmp_path: Path
) -> None:
    await _maybe_seed(maybe_store)
    (tmp_path / "entity-overrides.yaml").write_text(OVERRIDES)
    overrides = project_overrides(tmp_path)
    player = await resolve_role_constraints("player", maybe_store, overrides)
    assert player.must_do == (*PLAYER.must_do, "Run the linters before handing over")
    assert player.ask_before == (*PLAYER.ask_before, "Adding a database migration")
    assert player.must_not_do == PLAYER.must_not_do
    coach = await resolve_role_constraints("coach", maybe_store, overrides)
    assert coach.escalate_when[-1] == "The build is red on main" and len(coach.escalate_when) == 4
    gate = await gate_thresholds("feature", 5, maybe_store, overrides)
    assert (gate.coverage_threshold, gate.arch_review_threshold) == (0.75, 60)
    assert (await gate_thresholds("feature", 7, maybe_store, overrides)).coverage_threshold == 0.85


def test_missing_home_overrides_mean_none_and_bad_files_are_named_errors(tmp_path: Path) -> None:
    assert project_overrides(tmp_path).apply(builtin_knowledge()) == builtin_knowledge()
    with pytest.raises(KnowledgeError, match="no such overrides file"):
        load_overrides(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    for text, message in [
        ("roles: [1, 2", "not a valid overrides file"),
        ("roles: {player: {must_do: [x]}}", "not a valid overrides file"),
        ("quality_gates: {feature: {'4-5': {coverage_threshold: 1}}}", "QG-feature-4-5"),
        ("quality_gates: {feature: {'4-6': {tests_required: null}}}", "QG-feature-4-6"),
    ]:
        bad.write_text(text)
        with pytest.raises(KnowledgeError, match=message):
            load_overrides(bad).apply(builtin_knowledge())


async def test_project_overview_is_seeded_from_readme_and_claude_md(
    store: MemoryBackend, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    assert (await seed_project_overview(store, "proj-1", project)).written == 0
    (project / "README.md").write_text("# Widget\nA widget factory.\n")
    (project / "CLAUDE.md").write_text("Run `make test` before committing.\n")
    assert (await seed_project_overview(store, "proj-1", project)).created == ["overview"]
    assert (await seed_project_overview(store, "proj-1", project)).unchanged == ["overview"]
    (project / "README.md").write_text("# Widget\nA widget factory, now with gears.\n")
    assert (await seed_project_overview(store, "proj-1", project)).updated == ["overview"]
    [overview] = [ep async for ep in store.scan(group_ids=["proj-1"])]
    assert overview.kind == "project_overview"
    assert "gears" in overview.body and "make test" in overview.body


async def test_seed_version_lives_outside_the_knowledge_groups(store: MemoryBackend) -> None:
    await seed_system_knowledge(store)
    assert await store.count(group_ids=[SEED_GROUP]) == 1
    assert SEED_GROUP not in SYSTEM_GROUPS
    role_id = stable_id(ROLE_CONSTRAINTS_GROUP, ROLE_CONSTRAINTS, "ROLE-player")
    assert isinstance(await store.get(role_id), Episode)
