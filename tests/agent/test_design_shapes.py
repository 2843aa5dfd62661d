"""The design documents' own examples, loaded as written (issue 13): FEAT-GE-001's override
file, gate profile and turn state; GuardKit's ADR, task outcome and failed approaches
(docs/architecture/graphiti-architecture.md, TASK-GE-004). Each test checks the values that
come out, on every layer."""

from __future__ import annotations

import asyncio
import re
import sys
from asyncio.subprocess import PIPE
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml  # type: ignore[import-untyped]

from backends.errors import InvalidEpisode
from backends.model import Episode
from backends.protocol import MemoryBackend
from memory.agent.decisions import (
    Adr,
    capture_failed_approach,
    get_adr,
    list_failed_approaches,
    load_failed_approaches,
    record_adr,
    record_decision,
    record_failed_approach,
    search_adrs,
    supersede_adr,
)
from memory.agent.knowledge import gate_thresholds, project_overrides, resolve_role_constraints
from memory.agent.memories import AgentMemory
from memory.agent.outcomes import TaskOutcome
from memory.agent.turns import TurnState, latest_turn, record_turn
from memory.context import Task, build_coach_prompt
from memory.context.format import gate_block
from memory.store.dual import DualBackend
from memory.store.selection import open_memory
from seeds import (
    DESIGN_OVERRIDES,
    ImplementationMode,
    KnowledgeError,
    QualityGateProfile,
    builtin_knowledge,
)

PROJECT = "proj-1"
CHILD = str(Path(__file__).parents[1] / "dual" / "dual_child.py")

# FEAT-GE-001, "Per-Project Override Mechanism", as written (comment included).
DESIGN_OVERRIDE_FILE = """\
# .guardkit/config/entity-overrides.yaml (optional, per-project)

role_constraints:
  coach:
    must_do_additions:
      - "Verify OPG registration compliance"
      - "Check Moneyhub API contract alignment"
    escalate_when_additions:
      - "Financial data handling inconsistency detected"

quality_gate_configs:
  feature:
    overrides:
      - complexity_range: [4, 6]
        coverage_threshold: 0.85  # Higher than default 0.80 for this project
"""

# FEAT-GE-001's TurnStateEpisode, as ``json.dumps(asdict(state))`` writes it.
DESIGN_TURN = {
    "entity_type": "turn_state",
    "feature_id": "FEAT-001",
    "task_id": "TASK-003",
    "turn_number": 2,
    "player_decision": "Player implemented authentication middleware.",
    "coach_decision": "revise",
    "blockers_found": [],
    "progress_summary": "Login and logout work; session timeout is missing",
    "acceptance_criteria_status": {"login": "verified", "logout": "pending",
                                   "session-timeout": "pending"},
    "mode": "CONTINUING_WORK",
    "quality_gate_results": None,
    "timestamp": "2026-01-29T16:53:46.199251+00:00",
}

# docs/architecture/graphiti-architecture.md, "ADREntity", with its enums as written.
DESIGN_ADR = {
    "id": "ADR-0001",
    "title": "Use hash-based task IDs",
    "status": "ACCEPTED",
    "trigger": "TASK_REVIEW",
    "source_task_id": "TASK-001",
    "context": "Need concurrent-safe task creation",
    "decision": "Use SHA256 hash of title + timestamp",
    "rationale": "Eliminates race conditions, works offline",
    "alternatives_considered": ["Sequential IDs", "UUID"],
    "consequences": ["Cannot predict ID", "Slightly longer IDs"],
    "tags": ["task-management", "concurrency"],
    "confidence": 0.9,
}

# The same document, "TaskOutcome" (naive datetimes, as its example writes them).
DESIGN_OUTCOME: dict[str, Any] = {
    "id": "OUT-A1B2C3D4",
    "outcome_type": "TASK_COMPLETED",
    "task_id": "TASK-001",
    "task_title": "Implement OAuth2",
    "task_requirements": "Add OAuth2 authentication with PKCE flow",
    "success": True,
    "summary": "Successfully implemented OAuth2",
    "approach_used": "Used passport.js library with custom strategy",
    "patterns_used": ["Strategy Pattern", "Dependency Injection"],
    "problems_encountered": ["CORS issues with redirect URIs"],
    "lessons_learned": ["Always test redirect URIs in production-like env"],
    "tests_written": 15,
    "test_coverage": 0.92,
    "review_cycles": 2,
    "started_at": datetime(2024, 1, 15, 10, 0),
    "completed_at": datetime(2024, 1, 15, 14, 30),
    "duration_minutes": 270,
    "feature_id": "FEAT-AUTH",
    "related_adr_ids": ["ADR-0042"],
}

# TASK-GE-004, "Initial Failed Approaches to Seed", as written.
DESIGN_FAILURES: list[dict[str, Any]] = [
    {"id": "FAIL-SUBPROCESS",
     "approach": "Using subprocess.run() to invoke guardkit task-work",
     "symptom": "subprocess.CalledProcessError: Command 'guardkit task-work' not found",
     "root_cause": "CLI command doesn't exist - task-work is a Claude Code slash command",
     "fix_applied": "Use SDK query() to invoke '/task-work TASK-XXX' as a subagent",
     "prevention": "BEFORE implementing task-work invocation, check ADR-FB-001. If symptom "
                   "contains 'subprocess' or 'Command not found', use SDK query() instead.",
     "context": "feature-build", "related_adrs": ["ADR-FB-001"], "severity": "critical",
     "occurrences": 3},
    {"id": "FAIL-TASK-PATH",
     "approach": "Using TASK-XXX ID for worktree path construction",
     "symptom": "FileNotFoundError at .guardkit/worktrees/TASK-XXX/...",
     "root_cause": "In feature mode, worktree is shared and named after feature (FEAT-XXX), "
                   "not individual tasks",
     "fix_applied": "Use feature_worktree_id for path construction",
     "prevention": "BEFORE constructing worktree paths, check ADR-FB-002. In feature mode, "
                   "always use FEAT-XXX, never TASK-XXX.",
     "context": "feature-build", "related_adrs": ["ADR-FB-002"], "severity": "high",
     "occurrences": 2},
    {"id": "FAIL-MOCK-PRELOOP",
     "approach": "TaskWorkInterface.execute_design_phase() returning mock data",
     "symptom": "Pre-loop returns suspiciously round values (complexity=5, arch_score=80)",
     "root_cause": "Stub implementation returning placeholder data instead of invoking real "
                   "task-work",
     "fix_applied": "Implement execute_design_phase() with SDK query() to "
                    "'/task-work --design-only'",
     "prevention": "BEFORE trusting pre-loop results, verify they come from real task-work "
                   "invocation. Check ADR-FB-003. Suspiciously round numbers indicate mock data.",
     "context": "feature-build", "related_adrs": ["ADR-FB-003"], "severity": "critical",
     "occurrences": 2},
    {"id": "FAIL-SCHEMA-MISMATCH",
     "approach": "Writing results to 'quality_gates' but reading from 'test_results'",
     "symptom": "Coach can't find test results, defaults to score=0",
     "root_cause": "Schema mismatch between task-work writer and CoachValidator reader",
     "fix_applied": "Aligned schema to use 'quality_gates' consistently",
     "prevention": "BEFORE reading/writing shared JSON files, verify schema alignment between "
                   "writer and reader. Check for existing field names in both components.",
     "context": "feature-build", "severity": "high", "occurrences": 4},
    {"id": "FAIL-ALL-TESTS",
     "approach": "Running 'pytest tests/' to verify task-specific changes",
     "symptom": "Unrelated test failures from other tasks in shared worktree",
     "root_cause": "In feature mode, tests/ contains tests from ALL tasks, not just current task",
     "fix_applied": "Implemented task-specific test filtering",
     "prevention": "BEFORE running tests in feature mode, filter to task-specific tests only. "
                   "Or use --ignore patterns to exclude other task tests.",
     "context": "feature-build", "severity": "medium", "occurrences": 4},
]


def _project_with_design_overrides(tmp_path: Path) -> Path:
    """A project holding the design's override file at the design's path; returns its home."""
    project = tmp_path / "project"
    (project / DESIGN_OVERRIDES).parent.mkdir(parents=True)
    (project / DESIGN_OVERRIDES).write_text(DESIGN_OVERRIDE_FILE)
    return project / ".dualmem"


async def test_the_design_override_file_at_the_design_path(
    maybe_store: MemoryBackend | None, tmp_path: Path
) -> None:
    home = _project_with_design_overrides(tmp_path)
    overrides = project_overrides(home)
    coach = await resolve_role_constraints("coach", maybe_store, overrides)
    default = builtin_knowledge().role("coach")
    assert coach.must_do == (*default.must_do, "Verify OPG registration compliance",
                             "Check Moneyhub API contract alignment")
    assert coach.escalate_when[-1] == "Financial data handling inconsistency detected"
    assert coach.must_not_do == default.must_not_do
    gate = await gate_thresholds("feature", 5, maybe_store, overrides)
    assert (gate.key, gate.coverage_threshold, gate.arch_review_threshold) == (
        "QG-feature-4-6", 0.85, 60)
    assert "- Coverage: required, at least 85%\n" in gate_block(gate).text
    assert (await gate_thresholds("feature", 7, maybe_store, overrides)).coverage_threshold == 0.85
    assert (await gate_thresholds("feature", 3, maybe_store, overrides)).coverage_threshold == 0.70


def test_both_override_files_add_up_and_ours_wins_a_threshold(tmp_path: Path) -> None:
    home = _project_with_design_overrides(tmp_path)
    home.mkdir()
    (home / "entity-overrides.yaml").write_text(
        "roles: {coach: {must_do_additions: [Check the changelog]}}\n"
        "quality_gates: {feature: {'4-6': {coverage_threshold: 0.9, arch_review_threshold: 65}}}\n"
    )
    knowledge = project_overrides(home).apply(builtin_knowledge())
    assert knowledge.role("coach").must_do[-3:] == (
        "Verify OPG registration compliance", "Check Moneyhub API contract alignment",
        "Check the changelog")
    gate = knowledge.gate("feature", 5)
    assert (gate.coverage_threshold, gate.arch_review_threshold) == (0.9, 65)


@pytest.mark.parametrize(("text", "key"), [
    ("quality_gate_configs: {feature: {overrides: [{complexity_range: [4, 6], "
     "coverage_threshold: 85}]}}",
     "quality_gate_configs.feature.overrides.0.coverage_threshold"),
    ("quality_gates: {feature: {'4-6': {coverage_threshold: 80}}}",
     "quality_gates.feature.4-6.coverage_threshold"),
    ("quality_gates: {feature: {'4-6': {coverage_threshold: -0.1}}}",
     "quality_gates.feature.4-6.coverage_threshold"),
])
def test_a_threshold_that_cannot_be_a_fraction_is_an_error_naming_its_key(
    tmp_path: Path, text: str, key: str
) -> None:
    home = tmp_path / "project" / ".dualmem"
    home.mkdir(parents=True)
    (home / "entity-overrides.yaml").write_text(text)
    with pytest.raises(KnowledgeError, match=re.escape(key) + ".*fraction"):
        project_overrides(home)


def test_the_design_gate_profile_episode_as_written() -> None:
    # FEAT-GE-001's QualityGateConfigEpisode for feature 4-6, every field, as asdict() writes it.
    episode = {
        "entity_type": "quality_gate_config", "task_type": "feature", "complexity_range": [4, 6],
        "arch_review_required": True, "arch_review_threshold": 60, "coverage_required": True,
        "coverage_threshold": 0.80, "tests_required": True, "tests_must_pass": True,
        "effective_from": "2026-01-01",
    }
    profile = QualityGateProfile.model_validate(episode)
    assert profile.key == "QG-feature-4-6" and profile.complexity == (4, 6)
    assert (profile.coverage_threshold, profile.tests_must_pass, profile.effective_from) == (
        0.80, True, "2026-01-01")
    assert profile.model_dump(exclude={"effective_from"}) == (
        builtin_knowledge().gate("feature", 5).model_dump(exclude={"effective_from"}))
    assert gate_block(profile).text == (
        "**feature, complexity 4-6** (QG-feature-4-6) (in effect from 2026-01-01):\n"
        "- Architecture review: required, score at least 60\n"
        "- Coverage: required, at least 80%\n- Tests: required, must pass\n"
    )
    # The design's defaults, when a profile names only its task type.
    assert QualityGateProfile(task_type="bugfix").model_dump() == {
        "task_type": "bugfix", "complexity": (1, 10), "arch_review_required": True,
        "arch_review_threshold": 60, "coverage_required": True, "coverage_threshold": 0.80,
        "tests_required": True, "tests_must_pass": True, "effective_from": "",
    }
    tests_may_fail = profile.model_copy(update={"tests_must_pass": False})
    assert "- Tests: required\n" in gate_block(tests_may_fail).text
    with pytest.raises(ValueError, match="entity_type"):
        QualityGateProfile.model_validate(episode | {"entity_type": "turn_state"})


async def test_the_design_turn_state_as_written(store: MemoryBackend) -> None:
    state = TurnState.from_json(orjson.dumps(DESIGN_TURN).decode())
    assert (state.turn_number, state.coach_decision, state.mode) == (2, "revise", "CONTINUING_WORK")
    assert state.acceptance_criteria_status == {"login": "verified", "logout": "pending",
                                                "session-timeout": "pending"}
    assert state.timestamp == datetime(2026, 1, 29, 16, 53, 46, 199251, tzinfo=UTC)
    assert state.quality_gate_results == {} and state.blockers_found == ()
    assert state.turn_id == "TURN-FEAT-001-TASK-003-T2"
    await record_turn(store, PROJECT, state)
    loaded = await latest_turn(store, PROJECT, "FEAT-001")
    assert loaded == state
    # Stored under the design's names, so its readers find their fields.
    stored = state.to_episode(PROJECT).data
    assert isinstance(stored, dict)
    assert {"turn_number", "blockers_found", "acceptance_criteria_status",
            "quality_gate_results", "timestamp"} <= set(stored)

    task = Task(id="TASK-003", description="Add session timeout", complexity=5,
                feature_id="FEAT-001", is_autobuild=True, current_actor="coach", turn_number=3)
    prompt = await build_coach_prompt(store, task, project_id=PROJECT)
    assert (
        "## Previous Turn Context (Turn 2 of 3)\n\n"
        "Player implemented authentication middleware.\n"
        "Progress: Login and logout work; session timeout is missing\n"
        "AC status: {login: verified, logout: pending, session-timeout: pending}\n"
        "Blockers: None\n"
        "Coach decision: REVISE\n"
    ) in prompt


def test_turn_states_in_our_earlier_shape_and_decisions_in_capitals() -> None:
    ours = TurnState.model_validate({
        "feature_id": "F", "task_id": "T", "turn": 3, "blockers": ["flaky CI"],
        "acceptance_criteria": {"login": "met"}, "gate_results": {"coverage": 0.7},
        "recorded_at": "2026-02-01T10:00:00Z", "coach_decision": "APPROVE",
    })
    assert (ours.turn, ours.blockers, ours.acceptance_criteria, ours.gate_results) == (
        3, ("flaky CI",), {"login": "met"}, {"coverage": 0.7})
    assert ours.coach_decision == "approve"
    assert TurnState.model_validate(DESIGN_TURN | {"coach_decision": ""}).coach_decision is None
    with pytest.raises(ValueError, match="coach_decision"):
        TurnState.model_validate(DESIGN_TURN | {"coach_decision": "maybe"})


async def test_the_design_adr_and_superseding_it(store: MemoryBackend) -> None:
    adr = Adr.model_validate(DESIGN_ADR)
    assert (adr.id, adr.status, adr.trigger, adr.confidence) == (
        "ADR-0001", "accepted", "task_review", 0.9)
    assert adr.alternatives_considered == ("Sequential IDs", "UUID")
    assert (adr.rationale, adr.source_task_id) == (
        "Eliminates race conditions, works offline", "TASK-001")
    await record_adr(store, PROJECT, adr)
    assert await get_adr(store, PROJECT, "ADR-0001") == adr

    # The document's service example: ADR-0002 "Use MongoDB instead" supersedes ADR-0001.
    await supersede_adr(store, PROJECT, "ADR-0001",
                        Adr.model_validate({"id": "ADR-0002", "title": "Use MongoDB instead"}))
    assert [a.adr_id for a in await search_adrs(store, PROJECT, "task IDs MongoDB")] == [
        "ADR-0002"]
    superseded = await search_adrs(store, PROJECT, "hash-based task IDs", status="SUPERSEDED")  # type: ignore[arg-type]  # any case, at run time
    assert [(a.adr_id, a.superseded_by) for a in superseded] == [("ADR-0001", "ADR-0002")]
    assert {a.adr_id for a in await search_adrs(store, PROJECT, "IDs MongoDB", status="any")} == {
        "ADR-0001", "ADR-0002"}

    new_id = await record_decision(store, PROJECT, question="Which database?",
                                   answer="PostgreSQL for ACID compliance",
                                   trigger="CLARIFYING_QUESTION", source_task_id="TASK-001")
    assert new_id == "ADR-0003"
    recorded = await get_adr(store, PROJECT, new_id)
    assert recorded is not None
    assert (recorded.title, recorded.decision, recorded.trigger, recorded.source_task_id) == (
        "Which database?", "PostgreSQL for ACID compliance", "clarifying_question", "TASK-001")
    assert [a.adr_id for a in await search_adrs(store, PROJECT, "database", limit=1)] == [
        "ADR-0003"]


def test_adr_enumerations_refuse_what_they_do_not_name() -> None:
    with pytest.raises(ValueError, match="trigger"):
        Adr.model_validate(DESIGN_ADR | {"trigger": "a hunch"})
    with pytest.raises(ValueError, match="confidence"):
        Adr.model_validate(DESIGN_ADR | {"confidence": 90})


async def test_the_design_task_outcome_as_written(store: MemoryBackend) -> None:
    memory = AgentMemory(store, PROJECT)
    assert await memory.capture_task_outcome(**DESIGN_OUTCOME) == "OUT-A1B2C3D4"
    [episode] = await memory.memories(["task_outcome"])
    record = TaskOutcome.model_validate(episode.data)
    assert (record.outcome_type, record.task_title, record.summary) == (
        "task_completed", "Implement OAuth2", "Successfully implemented OAuth2")
    assert record.lessons_learned == ("Always test redirect URIs in production-like env",)
    assert (record.tests_written, record.test_coverage, record.review_cycles) == (15, 0.92, 2)
    assert record.started_at == datetime(2024, 1, 15, 10, 0, tzinfo=UTC)
    assert (record.duration_minutes, record.related_adr_ids) == (270, ("ADR-0042",))
    found = await memory.get_similar_task_outcomes("OAuth2 authentication PKCE")
    assert [f.outcome.id for f in found] == ["OUT-A1B2C3D4"]

    # Without an id: the same OUT id every time the task's outcome is captured.
    fields = {k: v for k, v in DESIGN_OUTCOME.items() if k not in ("id", "duration_minutes")}
    blocked = fields | {"task_id": "TASK-002", "outcome_type": "task_blocked", "success": False}
    first = await memory.capture_task_outcome(**blocked)
    assert re.fullmatch(r"OUT-[0-9A-F]{8}", first)
    assert await memory.capture_task_outcome(**blocked | {"summary": "Blocked on CORS"}) == first
    again = [TaskOutcome.model_validate(e.data) for e in await memory.memories(["task_outcome"])]
    assert [(o.id, o.duration_minutes, o.outcome) for o in again if o.task_id == "TASK-002"] == [
        (first, 270, "Blocked on CORS")]
    phase = await memory.capture_task_outcome(**fields | {"outcome_type": "PHASE_COMPLETED",
                                                          "summary": "Planning done"})
    assert phase not in (first, "OUT-A1B2C3D4")


def test_a_task_outcome_that_cannot_be_one_is_a_named_error() -> None:
    memory = AgentMemory(None, PROJECT)  # type: ignore[arg-type]  # refused before any write
    with pytest.raises(InvalidEpisode, match="test_coverage"):
        asyncio.run(memory.capture_task_outcome(**DESIGN_OUTCOME | {"test_coverage": 92}))
    with pytest.raises(InvalidEpisode, match="outcome_type"):
        asyncio.run(memory.capture_task_outcome(**DESIGN_OUTCOME | {"outcome_type": "done"}))
    with pytest.raises(InvalidEpisode, match="task_id"):
        asyncio.run(memory.capture_task_outcome(**DESIGN_OUTCOME | {"task_id": " "}))


async def test_a_capture_returns_its_id_when_only_the_file_layer_takes_it(
    tmp_path: Path,
) -> None:
    holder = await asyncio.create_subprocess_exec(
        sys.executable, CHILD, "hold", str(tmp_path), "0", stdin=PIPE, stdout=PIPE, stderr=PIPE,
    )
    try:
        assert holder.stdout is not None
        assert (await holder.stdout.readline()).strip() == b"ready"
        async with open_memory(tmp_path, "auto") as store:
            assert isinstance(store, DualBackend) and not store.holds_graph
            memory = AgentMemory(store, PROJECT)
            assert await memory.capture_task_outcome(**DESIGN_OUTCOME) == "OUT-A1B2C3D4"
            assert (await store.status()).pending == 1  # in the journal, not yet in the graph
            [episode] = await memory.memories(["task_outcome"])
            assert TaskOutcome.model_validate(episode.data).id == "OUT-A1B2C3D4"
        _, err = await asyncio.wait_for(holder.communicate(b"1\n"), 180)
        assert holder.returncode == 0, err
    finally:
        if holder.returncode is None:
            holder.kill()
            await holder.wait()


async def test_the_design_failed_approaches_as_written(store: MemoryBackend) -> None:
    for episode in DESIGN_FAILURES:
        await capture_failed_approach(store, PROJECT, episode)
    listed = await list_failed_approaches(store, PROJECT)
    assert [(f.id, f.occurrence_count) for f in listed][:2] in (
        [("FAIL-SCHEMA-MISMATCH", 4), ("FAIL-ALL-TESTS", 4)],
        [("FAIL-ALL-TESTS", 4), ("FAIL-SCHEMA-MISMATCH", 4)],
    )
    warnings = await load_failed_approaches(store, PROJECT, "subprocess task-work invocation")
    first = warnings[0]
    assert (first.id, first.severity, first.related_adrs, first.fix_applied) == (
        "FAIL-SUBPROCESS", "critical", ("ADR-FB-001",),
        "Use SDK query() to invoke '/task-work TASK-XXX' as a subagent")
    assert first.prevention.startswith("BEFORE implementing task-work invocation, check ADR-FB-001")
    assert len(await load_failed_approaches(store, PROJECT, "feature mode", limit=2)) == 2

    # New ones are numbered FAIL-NNN; a repeat keeps its id and adds what it learned.
    made = await record_failed_approach(store, PROJECT, "Editing the lock file by hand",
                                        symptom="resolver error",
                                        severity="HIGH")  # type: ignore[arg-type]  # any case
    other = await record_failed_approach(store, PROJECT, "Pinning to a yanked release",
                                         symptom="install fails", related_adrs=["ADR-0003"])
    assert (made.id, made.severity, other.id) == ("FAIL-001", "high", "FAIL-002")
    again = await record_failed_approach(store, PROJECT, "editing the lock file by hand",
                                         symptom="hash mismatch", related_adrs=["ADR-0007"],
                                         fix_applied="run the locker")
    assert (again.id, again.occurrence_count, again.related_adrs, again.fix_applied) == (
        "FAIL-001", 2, ("ADR-0007",), "run the locker")
    repeat = await record_failed_approach(
        store, PROJECT, "Using subprocess.run() to invoke guardkit task-work", symptom="again",
        related_adrs=["ADR-0009"])
    assert (repeat.id, repeat.occurrence_count, repeat.related_adrs) == (
        "FAIL-SUBPROCESS", 4, ("ADR-FB-001", "ADR-0009"))


def test_the_task_work_pitfalls_cite_the_design_adrs() -> None:
    task_work = next(m for m in builtin_knowledge().modes if m.name == "task_work")
    cited = [adr for pitfall in task_work.pitfalls
             for adr in re.findall(r"ADR-FB-00\d", pitfall)]
    assert cited == ["ADR-FB-001", "ADR-FB-002", "ADR-FB-003"]
    assert "query()" in task_work.pitfalls[0] and "FEAT-XXX" in task_work.pitfalls[1]
    # And the design's implementation mode episode loads as written.
    data = yaml.safe_load("""
        entity_type: implementation_mode
        mode: direct
        invocation_method: inline
        result_location_pattern: The working tree
        state_recovery_strategy: git_check_first
        when_to_use: [Simple file ops]
        pitfalls: [Check git status first]
        complexity_range: [1, 3]
        ceremony_level: minimal
    """)
    mode = ImplementationMode.model_validate(data)
    assert (mode.key, mode.complexity, mode.invocation_method) == ("MODE-direct", (1, 3), "inline")


# --- 000 (GuardKit's Graphiti architecture) and 004: turn states in their own words ---------

# 000, "Turn State Capture (TASK-GE-002)", as written.
GUARDKIT_TURN = {"feature_id": "FEAT-GE", "task_id": "TASK-GE-001", "turn_number": 1,
                 "player_summary": "Implemented feature", "player_decision": "implemented",
                 "coach_decision": "approved"}
# 004, "Scenario 4": the turns a player's third turn starts from.
GR006_TURNS = [
    {"feature_id": "FEAT-AUTH", "task_id": "TASK-004", "turn_number": 1,
     "coach_decision": "FEEDBACK", "progress_summary": "Initial implementation incomplete"},
    {"feature_id": "FEAT-AUTH", "task_id": "TASK-004", "turn_number": 2,
     "coach_decision": "REJECTED", "progress_summary": "Tests failing, coverage at 65%",
     "feedback_summary": "Coverage must be ≥80%. Missing tests for error paths."},
]
# 001's TurnStateEpisode with its defaults left as they are.
GE001_DEFAULT_TURN = {"entity_type": "turn_state", "feature_id": "FEAT-001",
                      "task_id": "TASK-003", "turn_number": 0, "player_decision": "",
                      "coach_decision": "", "blockers_found": [], "progress_summary": "",
                      "acceptance_criteria_status": {}, "mode": "FRESH_START",
                      "quality_gate_results": None, "timestamp": ""}


async def test_turn_states_in_the_vocabulary_of_000_and_004(store: MemoryBackend) -> None:
    from memory import capture_turn_state, create_turn_state_from_autobuild

    entity = create_turn_state_from_autobuild(**GUARDKIT_TURN)
    assert (entity.coach_decision, entity.player_summary) == ("approve", "Implemented feature")
    assert entity.mode == "FRESH_START"  # 001's default
    await capture_turn_state(store, entity, project_id=PROJECT)
    assert await latest_turn(store, PROJECT, "FEAT-GE") == entity

    turns = [TurnState.model_validate(turn) for turn in GR006_TURNS]
    assert [t.coach_decision for t in turns] == ["revise", "revise"]
    # 004's formatter reads a turn as a dict.
    assert turns[1].get("feedback_summary", "") == GR006_TURNS[1]["feedback_summary"]
    assert turns[1]["turn_number"] == 2 and turns[0].get("unknown", "?") == "?"

    default = TurnState.model_validate(GE001_DEFAULT_TURN)
    assert (default.turn_number, default.coach_decision, default.turn_id) == (
        0, None, "TURN-FEAT-001-TASK-003-T0")
    assert default.timestamp.tzinfo is not None  # "" is "not given": now


def test_turns_record_takes_001s_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memory.cli import main

    turn = tmp_path / "turn.json"
    turn.write_bytes(orjson.dumps(GE001_DEFAULT_TURN))
    code = main(["--home", str(tmp_path / ".dualmem"), "--backend", "file", "--json",
                 "turns", "record", str(turn)])
    assert code == 0, capsys.readouterr().err
    assert orjson.loads(capsys.readouterr().out)["turn_id"] == "TURN-FEAT-001-TASK-003-T0"


# --- 000: the context loaders, as its examples call them and read their results -------------

DESIGN_OVERVIEW = {
    "id": "feature-build", "name": "Feature Build",
    "tagline": "Autonomous player-coach implementation of planned features",
    "purpose": "Build a planned feature task by task without losing its intent",
    "what_it_is": ["An orchestrator of player and coach turns"],
    "what_it_is_not": ["A replacement for /task-work"],
    "invariants": ["The coach never writes implementation code"],
    "architecture_summary": "SDK query() per turn in a shared worktree",
    "key_components": ["AutoBuildOrchestrator"], "key_decisions": ["ADR-FB-001"],
    "created_at": datetime(2026, 1, 10, 9, 0), "updated_at": datetime(2026, 1, 12, 9, 0),
}


async def test_000s_context_loaders_as_its_examples_use_them(store: MemoryBackend) -> None:
    from memory import (
        ContextFormatterConfig,
        FeatureOverview,
        format_context_for_injection,
        get_adr,
        list_adrs,
        load_critical_adrs,
        load_critical_context,
        load_feature_overview,
        load_role_context,
        record_feature_overview,
        search,
    )

    player_context = await load_role_context("player", "feature-build")
    assert player_context.startswith("# PLAYER Role Constraints")
    assert "**Primary responsibility**: " in player_context and "\n## MUST DO\n- " in player_context
    coach_context = await load_role_context("coach", "feature-build", store)
    assert "## MUST NOT DO\n- Write or modify implementation code" in coach_context

    await record_adr(store, PROJECT, Adr.model_validate(
        DESIGN_ADR | {"violation_symptoms": ["Sequential TASK-NNN ids in new tasks"]}))
    adrs = await load_critical_adrs(store, PROJECT)
    assert [(adr["id"], adr["title"], adr["decision"]) for adr in adrs] == [
        ("ADR-0001", DESIGN_ADR["title"], DESIGN_ADR["decision"])]
    assert adrs[0].get("violation_symptoms", []) == ("Sequential TASK-NNN ids in new tasks",)
    assert await get_adr(store, PROJECT, "ADR-0001") == adrs[0]
    assert await list_adrs(store, PROJECT) == adrs

    await record_feature_overview(store, PROJECT, FeatureOverview.model_validate(DESIGN_OVERVIEW))
    overview = await load_feature_overview(store, PROJECT, "feature-build")
    assert overview is not None
    assert (overview.name, overview.purpose, overview.invariants) == (
        "Feature Build", DESIGN_OVERVIEW["purpose"],
        ("The coach never writes implementation code",))
    assert await load_feature_overview(store, PROJECT, "no-such-feature") is None

    await capture_failed_approach(store, PROJECT, DESIGN_FAILURES[0])
    warnings = await load_failed_approaches(store, PROJECT, "subprocess task-work", limit=5)
    assert warnings[0]["symptom"] == DESIGN_FAILURES[0]["symptom"]
    assert warnings[0]["prevention"].startswith("BEFORE implementing task-work")
    assert warnings[0].get("related_adrs", []) == ("ADR-FB-001",)

    memory = AgentMemory(store, PROJECT)
    await memory.capture_task_outcome(**DESIGN_OUTCOME)
    similar = await memory.get_similar_task_outcomes("Implement OAuth2 authentication", limit=5)
    assert (similar[0]["task_id"], similar[0]["summary"]) == ("TASK-001", DESIGN_OUTCOME["summary"])
    assert similar[0].get("lessons_learned", []) == tuple(DESIGN_OUTCOME["lessons_learned"])

    hits = await search(store, "OAuth2 PKCE", num_results=5)
    assert 0 < len(hits) <= 5

    context = await load_critical_context(store, PROJECT, task_id="TASK-001",
                                          feature_id="feature-build", command="feature-build")
    assert context.architecture_decisions == context.relevant_adrs == adrs
    assert [o.task_id for o in context.similar_task_outcomes] == ["TASK-001"]
    assert context.feature_build is not None and context.feature_build.name == "autobuild"
    text = format_context_for_injection(context)
    assert "### Feature overview: feature-build: Feature Build" in text
    assert "### Similar tasks\n\n- **TASK-001** succeeded" in text
    assert "### Feature build\n\n" in text
    config = ContextFormatterConfig(include_system_context=True, include_quality_gates=True,
                                    include_adrs=True, include_failures=True,
                                    max_items_per_section=10)
    assert format_context_for_injection(context, config) == text
    quiet = format_context_for_injection(
        context, ContextFormatterConfig(include_quality_gates=False, include_adrs=False))
    assert "ADR-0001" not in quiet and "Quality gates" not in quiet


async def test_the_critical_context_has_000s_system_context_and_what_worked(
    store: MemoryBackend,
) -> None:
    from memory import load_critical_context

    await store.upsert(Episode.create(group_id=PROJECT, kind="project_overview", key="overview",
                                      name="Project overview: widget",
                                      body="# Widget\nMakes widgets."))
    memory = AgentMemory(store, PROJECT)
    await memory.add_pattern("Validate settings once, at startup")
    context = await load_critical_context(store, PROJECT, task="validate settings at startup")
    assert [e.name for e in context.system_context] == ["Project overview: widget"]
    assert [e.body for e in context.successful_patterns] == ["Validate settings once, at startup"]
    assert context.relevant_rules == context.applicable_patterns == context.successful_patterns
    markdown = context.markdown()
    assert ("### System context\n\n- **Project overview: widget**: # Widget Makes widgets."
            in markdown)
    assert "### What worked here\n\n- Validate settings once, at startup" in markdown
    assert context.feature_build is None


async def test_a_task_outcome_keeps_the_created_at_it_was_given(store: MemoryBackend) -> None:
    created = datetime(2024, 1, 15, 14, 31, tzinfo=UTC)
    await AgentMemory(store, PROJECT).capture_task_outcome(**DESIGN_OUTCOME, created_at=created)
    [episode] = [e async for e in store.scan(kinds=["task_outcome"])]
    assert episode.created_at == created
    assert TaskOutcome.model_validate(episode.data).created_at == created


# --- 001: the authoritative quality-gates file and the shipped overrides example -------------


async def test_001s_quality_gates_file_is_authoritative(tmp_path: Path) -> None:
    from seeds import DESIGN_GATES

    home = _project_with_design_overrides(tmp_path)
    gates = home.parent / DESIGN_GATES
    gates.write_text("profiles:\n  - entity_type: quality_gate_config\n    task_type: testing\n"
                     "    complexity_range: [1, 10]\n    coverage_threshold: 0.95\n"
                     "  - task_type: feature\n    complexity_range: [4, 6]\n"
                     "    coverage_threshold: 0.60\n")
    overrides = project_overrides(home)
    assert (await gate_thresholds("testing", 3, overrides=overrides)).coverage_threshold == 0.95
    # entity-overrides.yaml (0.85) is applied after the gates file, so it wins a field both set
    assert (await gate_thresholds("feature", 5, overrides=overrides)).coverage_threshold == 0.85
    gates.write_text("- task_type: feature\n  complexity_range: [7, 10]\n  tests_must_pass: no\n")
    assert not (await gate_thresholds("feature", 8, overrides=project_overrides(home))
                ).tests_must_pass
    gates.write_text("- task_type: feature\n  complexity_range: [4, 6]\n  coverage: 0.9\n")
    with pytest.raises(KnowledgeError, match=r"quality-gates\.yaml: not a valid overrides file"):
        project_overrides(home)


async def test_the_shipped_overrides_example_applies(tmp_path: Path) -> None:
    import seeds

    example = Path(seeds.__file__).parent / "data" / "entity-overrides.yaml.example"
    (tmp_path / "project" / DESIGN_OVERRIDES).parent.mkdir(parents=True)
    (tmp_path / "project" / DESIGN_OVERRIDES).write_bytes(example.read_bytes())
    overrides = project_overrides(tmp_path / "project" / ".dualmem")
    coach = await resolve_role_constraints("coach", overrides=overrides)
    assert coach.must_do[-1] == "Check the public API against the changelog"
    gate = await gate_thresholds("feature", 5, overrides=overrides)
    assert (gate.coverage_threshold, gate.arch_review_threshold) == (0.85, 65)


def test_init_seeds_the_project_overview_as_000_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memory.cli import main

    project = tmp_path / "widget"
    project.mkdir()
    (project / "README.md").write_text("# Widget\nMakes widgets.\n")
    home = ["--home", str(project / ".dualmem"), "--backend", "file", "--json"]
    assert main([*home, "init"]) == 0
    assert orjson.loads(capsys.readouterr().out)["overview"]["created"] == ["overview"]
    assert main([*home, "list", "--kind", "project_overview"]) == 0
    listed = orjson.loads(capsys.readouterr().out)
    assert "Project overview: widget" in str(listed)


# --- 004: what each actor's job context holds ----------------------------------------------


async def test_004s_job_context_shows_the_feature_overview_and_modes_to_the_player_only(
    store: MemoryBackend,
) -> None:
    from memory.context import build_context

    await store.upsert(Episode.create(
        group_id=PROJECT, kind="feature_overview", key="FEAT-AUTH",
        name="FEAT-AUTH: user authentication",
        body="FEAT-AUTH: users log in with OAuth2 and PKCE; sessions time out after an hour"))
    player = Task(id="TASK-004", description="Implement user auth session timeout",
                  complexity=6, feature_id="FEAT-AUTH", is_autobuild=True,
                  current_actor="player", turn_number=3)
    shown = (await build_context(store, player, project_id=PROJECT)).markdown
    assert "users log in with OAuth2 and PKCE" in shown
    assert "Implementation mode" in shown
    coach = player.model_copy(update={"current_actor": "coach"})
    judged = (await build_context(store, coach, project_id=PROJECT)).markdown
    assert "Implementation mode" not in judged
    assert "Role constraints: coach" in judged and "Quality-gate thresholds" in judged


# --- 002 and 003: memory scoping (GroupIdMode) ----------------------------------------------


async def test_spec_isolation_keeps_other_specs_memories_out_when_asked(
    store: MemoryBackend,
) -> None:
    from memory.context import build_context

    await AgentMemory(store, PROJECT, "002-payments").add_gotcha(
        "Stripe webhooks arrive twice: make the refund handler idempotent")
    await AgentMemory(store, PROJECT, "001-auth").add_gotcha(
        "Session cookies need SameSite=Lax for the OAuth redirect")
    await AgentMemory(store, PROJECT).add_gotcha(
        "Refund amounts are stored in cents, never as floats")
    task = Task(description="Fix the refund handler for duplicate Stripe webhooks",
                spec="001-auth")
    shared = (await build_context(store, task, project_id=PROJECT)).markdown
    assert "Stripe webhooks arrive twice" in shared  # project-wide, the default (003)
    alone = task.model_copy(update={"isolation": "spec"})
    isolated = (await build_context(store, alone, project_id=PROJECT)).markdown
    assert "Stripe webhooks arrive twice" not in isolated
    assert "stored in cents" in isolated  # the project's own memories still enter


def test_spec_isolation_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memory.cli import main

    home = ["--home", str(tmp_path / ".dualmem"), "--backend", "file", "--json"]
    assert main([*home, "add", "--group", "p", "--kind", "gotcha", "--name", "n",
                 "--body", "x"]) == 0
    capsys.readouterr()
    assert main([*home, "context", "Fix the refund handler", "--isolate"]) != 0
    assert "--isolate goes with --spec" in capsys.readouterr().err
    assert main([*home, "context", "Fix the refund handler", "--spec", "001-auth",
                 "--isolate"]) == 0


# --- 000: knowledge gaps and interactive capture (FEAT-GR-004) -------------------------------


async def test_000s_gap_analysis_and_interactive_capture(store: MemoryBackend) -> None:
    from memory.agent.gaps import (
        InteractiveCaptureSession,
        KnowledgeCategory,
        analyze_gaps,
        capture_knowledge,
    )

    gaps = await analyze_gaps(store, PROJECT)
    assert len(gaps) == 9 and [g.importance for g in gaps][:4] == ["high"] * 4
    assert gaps[-1]["category"] == KnowledgeCategory.WORKFLOW_PREFERENCES  # read as a dict too
    await store.upsert(Episode.create(group_id=PROJECT, kind="adr", key="ADR-0001",
                                      name="ADR-0001", body={"adr_id": "ADR-0001", "title": "t"}))
    arch = await analyze_gaps(store, PROJECT, focus=KnowledgeCategory.ARCHITECTURE,
                              max_questions=5)
    assert [g.category for g in arch] == [KnowledgeCategory.ARCHITECTURE]
    assert all(g.category != "decisions" for g in await analyze_gaps(store, PROJECT))

    answers = iter(["api/ calls core/. core/ owns the database.", ""])
    events: list[str] = []

    def ui(event: str, data: Any = None) -> str | None:
        events.append(event)
        return next(answers) if event == "get_input" else None

    captured = await InteractiveCaptureSession(store, PROJECT).run_session(
        focus=None, max_questions=2, ui_callback=ui)
    assert [c.category for c in captured] == [KnowledgeCategory.PROJECT_OVERVIEW]
    assert captured[0].extracted_facts == ("[project overview] api/ calls core/.",
                                           "[project overview] core/ owns the database.")
    assert events[0] == "intro" and events[-1] == "summary" and "captured" in events
    left = {g.category for g in await analyze_gaps(store, PROJECT)}
    assert KnowledgeCategory.PROJECT_OVERVIEW not in left  # stored as the category's kind
    assert KnowledgeCategory.ARCHITECTURE in left  # skipped: an empty answer

    result = await InteractiveCaptureSession(store, PROJECT).run_abbreviated(
        questions=["What patterns were identified?", "What should be remembered?"],
        task_context={"task_id": "TASK-001", "review_mode": "architectural"},
        ui_callback=lambda event, data=None: "Keep the repository pattern"
        if event == "get_input" else None)
    assert [c["category"] for c in result["captured"]] == ["decisions", "decisions"]
    with pytest.raises(InvalidEpisode, match="no knowledge category 'moods'"):
        await capture_knowledge(store, PROJECT, "moods", "How?", "Fine")


def test_gaps_and_interview_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from memory.cli import main

    home = ["--home", str(tmp_path / ".dualmem"), "--backend", "file", "--json"]
    monkeypatch.setattr("sys.stdin", io.StringIO("Small PRs, one task each.\n"))
    assert main([*home, "interview", "--focus", "workflow_preferences"]) == 0
    out = orjson.loads(capsys.readouterr().out)
    assert out["captured"][0]["answer"] == "Small PRs, one task each."
    assert main([*home, "gaps", "--focus", "workflow_preferences"]) == 0
    assert orjson.loads(capsys.readouterr().out) == {"gaps": []}
    assert main([*home, "gaps"]) == 0
    assert len(orjson.loads(capsys.readouterr().out)["gaps"]) == 8


# --- 002 and 003: a session's insights in Auto-Claude's shape, and context for the next -----

# 003's session data model, its fields as written, with values.
AUTO_CLAUDE_SESSION = {
    "subtasks_completed": ["subtask-1", "subtask-2"],
    "discoveries": {
        "files_understood": {"src/hooks/useAuth.ts": "keeps the session token in React state"},
        "patterns_found": ["Pattern: use React hooks for state"],
        "gotchas_encountered": ["The token refresh races the first render"],
    },
    "what_worked": ["Wrapping the provider around the router"],
    "what_failed": ["Reading the token from localStorage on every render"],
    "recommendations_for_next_session": ["Add a test for the refresh race"],
}


async def test_003s_session_insights_and_002s_context_for_the_next_session(
    store: MemoryBackend,
) -> None:
    memory = AgentMemory(store, PROJECT, "003-auth")
    saved = await memory.save_session_insights(1, AUTO_CLAUDE_SESSION)
    assert {e.kind for e in saved} >= {"session_insight", "pattern", "gotcha",
                                       "codebase_discovery", "recommendation"}
    context = await memory.get_context_for_session(
        "Implementing feature X: keep the auth token refresh in React state")
    assert "use React hooks for state" in context
    assert "token refresh races the first render" in context
    [session] = await memory.get_session_history(limit=3)
    assert session["what_failed"] == AUTO_CLAUDE_SESSION["what_failed"]
