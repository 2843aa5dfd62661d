"""The design's scenario tasks against a labelled project memory, on every layer: which
sections appear, what they hold, and where the budget goes after a failure."""

from __future__ import annotations

from collections.abc import Iterable

from context_corpus import MEMORIES, PROJECT, filler

from backends.model import Episode
from backends.protocol import MemoryBackend
from memory.agent.turns import TurnState, record_turn
from memory.context import Category, ContextResult, Phase, Task, build_context, estimate_tokens
from memory.context.format import TITLES

from .conftest import fill

C = Category
FILLER = 30  # unrelated work, so that relevance thresholds have something to reject


def corpus(*leave_out: str) -> Iterable[Episode]:
    return [*(e for k, e in MEMORIES.items() if k not in leave_out), *filler(FILLER)]


def names(result: ContextResult, category: Category) -> str:
    """The text of one section of the context ('' when it is absent)."""
    title = f"### {TITLES[category][0]}"
    if title not in result.markdown:
        return ""
    return result.markdown.split(title, 1)[1].split("\n### ", 1)[0]


def shown(result: ContextResult) -> set[Category]:
    return {c for c in Category if names(result, c)}


def check_budget(result: ContextResult) -> None:
    assert estimate_tokens(result.markdown) == result.tokens_used <= result.budget
    assert f"Budget used: {result.tokens_used}/{result.budget} tokens" in result.markdown
    for stats in result.categories.values():
        assert stats.used <= stats.allocated + stats.borrowed


async def test_first_implementation_task(store: MemoryBackend) -> None:
    await fill(store, corpus("o-echo"))
    task = Task(
        id="TASK-001", description="Implement ping tool for MCP server", complexity=3,
        feature_id="FEAT-SKEL-001",
    )
    result = await build_context(store, task, project_id=PROJECT)
    check_budget(result)
    assert result.analysis.is_first_of_type and result.budget == 2600
    assert shown(result) == {C.FEATURE, C.PATTERNS, C.ARCHITECTURE, C.WARNINGS, C.DOMAIN}
    assert "MCP server skeleton" in names(result, C.FEATURE)
    assert "Register MCP tools" in names(result, C.PATTERNS)
    assert "MCP server layout" in names(result, C.ARCHITECTURE)
    assert "ADR-001" in names(result, C.ARCHITECTURE)
    assert "stdout" in names(result, C.WARNINGS)
    assert "session" not in result.markdown.casefold()  # nothing of the auth work
    assert max(result.categories.values(), key=lambda s: s.allocated) is result.categories[
        C.ARCHITECTURE
    ]

    # Once a similar task is on record, the task is familiar: a smaller budget.
    await store.upsert(MEMORIES["o-echo"])
    familiar = await build_context(store, task, project_id=PROJECT)
    assert familiar.analysis.similar_count == 1 and familiar.budget == 2300
    assert "TASK-010 succeeded in 2 turns" in names(familiar, C.SIMILAR_OUTCOMES)


async def test_refinement_after_failure_puts_warnings_first(store: MemoryBackend) -> None:
    await fill(store, corpus())
    task = Task(
        id="TASK-002", description="Fix authentication middleware", task_type="refinement",
        complexity=5, refinement_attempt=2, last_failure_type="circular_dependency",
    )
    result = await build_context(store, task, project_id=PROJECT)
    check_budget(result)
    a = result.analysis
    assert a.is_refinement and a.similar_count == 1 and result.budget == 5520
    allocated = {c: s.allocated for c, s in result.categories.items()}
    assert sorted(allocated, key=allocated.__getitem__)[-2:] == [C.SIMILAR_OUTCOMES, C.WARNINGS]
    warnings = names(result, C.WARNINGS)
    assert "Importing the app from authentication middleware**: symptom: circular" in warnings
    assert "root cause: middleware imported app" in warnings
    assert "TASK-021 failed in 4 turns" in names(result, C.SIMILAR_OUTCOMES)
    assert "Inject the session store" in names(result, C.PATTERNS)
    used = {c: s.used for c, s in result.categories.items()}
    assert max(used, key=used.__getitem__) in (C.WARNINGS, C.SIMILAR_OUTCOMES)


async def test_review_weights_patterns_and_architecture(store: MemoryBackend) -> None:
    await fill(store, corpus())
    task = Task(
        id="TASK-003", description="Review authentication implementation", task_type="review",
        complexity=4,
    )
    result = await build_context(store, task, phase=Phase.REVIEW, project_id=PROJECT)
    check_budget(result)
    allocated = {c: s.allocated for c, s in result.categories.items()}
    assert sorted(allocated, key=allocated.__getitem__)[-2:] == [C.ARCHITECTURE, C.PATTERNS]
    assert "Authentication module" in names(result, C.ARCHITECTURE)
    assert "Inject the session store" in names(result, C.PATTERNS)
    assert "TASK-022 succeeded" in names(result, C.SIMILAR_OUTCOMES)
    assert not shown(result) & {C.ROLE_CONSTRAINTS, C.TURN_STATES, C.QUALITY_GATES}


async def record_rejected_turns(store: MemoryBackend) -> None:
    for turn, feedback, progress in (
        (1, "Initial implementation incomplete", "Login endpoint only"),
        (2, "Coverage must be at least 80%. Missing tests for error paths.",
         "Tests failing, coverage at 65%"),
    ):
        await record_turn(store, PROJECT, TurnState.model_validate({
            "feature_id": "FEAT-AUTH-002", "task_id": "TASK-004", "turn": turn,
            "coach_decision": "revise", "coach_feedback": feedback,
            "progress_summary": progress, "player_decision": "implement",
        }))


async def test_player_turn_3_after_rejection(store: MemoryBackend) -> None:
    await fill(store, corpus())
    await record_rejected_turns(store)
    task = Task(
        id="TASK-004", description="Implement user auth", complexity=6,
        feature_id="FEAT-AUTH-002", is_autobuild=True, current_actor="player", turn_number=3,
    )
    result = await build_context(store, task, project_id=PROJECT)
    check_budget(result)
    a = result.analysis
    assert a.has_previous_turns and a.is_refinement and len(a.turns) == 2
    allocated = {c: s.allocated for c, s in result.categories.items()}
    assert max(allocated, key=allocated.__getitem__) is C.TURN_STATES
    assert allocated[C.WARNINGS] >= allocated[C.SIMILAR_OUTCOMES]
    assert {C.ROLE_CONSTRAINTS, C.QUALITY_GATES, C.TURN_STATES, C.IMPLEMENTATION_MODES,
            C.WARNINGS} <= shown(result)

    roles = names(result, C.ROLE_CONSTRAINTS)
    assert roles.startswith(": player")
    assert roles.index("**Must:**") < roles.index("**Must not:**") < roles.index("**Ask before:**")
    assert "Validate quality gates" in roles
    gates = names(result, C.QUALITY_GATES)
    assert "do not adjust them mid-session" in gates and "at least 80%" in gates
    turns = names(result, C.TURN_STATES)
    assert turns.index("**Turn 1 (TASK-004)**") < turns.index("**Turn 2 (TASK-004)**")
    assert "Feedback: Coverage must be at least 80%" in turns
    assert "task_work" in names(result, C.IMPLEMENTATION_MODES)
    assert "Importing the app from authentication middleware" in names(result, C.WARNINGS)


async def test_turn_1_has_no_turn_history(store: MemoryBackend) -> None:
    await fill(store, corpus())
    task = Task(
        id="TASK-004", description="Implement user auth", complexity=6,
        feature_id="FEAT-AUTH-002", is_autobuild=True, turn_number=1,
    )
    result = await build_context(store, task, project_id=PROJECT)
    assert not result.analysis.has_previous_turns and not result.analysis.is_refinement
    assert C.TURN_STATES not in shown(result)
    assert {C.ROLE_CONSTRAINTS, C.QUALITY_GATES, C.IMPLEMENTATION_MODES} <= shown(result)


async def test_coach_gets_its_constraints_and_gates(store: MemoryBackend) -> None:
    await fill(store, corpus())
    task = Task(
        id="TASK-004", description="Implement user auth", complexity=5,
        feature_id="FEAT-AUTH-002", is_autobuild=True, current_actor="coach", turn_number=1,
    )
    result = await build_context(store, task, project_id=PROJECT)
    check_budget(result)
    roles = names(result, C.ROLE_CONSTRAINTS)
    assert roles.startswith(": coach") and "Write or modify implementation code" in roles
    assert "Escalate when" in roles
    allocated = {c: s.allocated for c, s in result.categories.items()}
    assert max(allocated, key=allocated.__getitem__) in (C.QUALITY_GATES, C.SIMILAR_OUTCOMES)
