"""The FEAT-GR-006 rules as implemented: task types, budget arithmetic, allocation splits,
and the token estimate's guarantees."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.context.analysis import Analysis, TaskType, characterise, normalize_task_type
from memory.context.budget import Category, normalize, plan_budget
from memory.context.task import Phase, Task
from memory.context.tokens import estimate_tokens, measure

C = Category


def analysis(
    phase: Phase = Phase.IMPLEMENT, *, similar: int = 3, rejected: bool = False, **task: object
) -> Analysis:
    return characterise(
        Task(description="Implement a thing", **task),  # type: ignore[arg-type]
        phase,
        similar_count=similar,
        previous_turn_rejected=rejected,
    )


def percent(a: Analysis) -> dict[Category, Fraction]:
    return {c: s * 100 for c, s in plan_budget(a).shares.items()}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("implementation", TaskType.IMPLEMENTATION),
        ("refine", TaskType.REFINEMENT),
        ("Refinement", TaskType.REFINEMENT),
        ("docs", TaskType.DOCUMENTATION),
        ("documentation", TaskType.DOCUMENTATION),
        ("review", TaskType.REVIEW),
        (" planning ", TaskType.PLANNING),
        ("feature", TaskType.IMPLEMENTATION),
        ("", TaskType.IMPLEMENTATION),
    ],
)
def test_task_type_mapping(raw: str, expected: TaskType) -> None:
    assert normalize_task_type(raw) is expected


@pytest.mark.parametrize(
    ("complexity", "base"), [(1, 2000), (3, 2000), (4, 4000), (6, 4000), (7, 6000), (10, 6000)]
)
def test_base_budget_by_complexity(complexity: int, base: int) -> None:
    assert plan_budget(analysis(complexity=complexity, similar=3)).total == base


@pytest.mark.parametrize(
    ("similar", "total"), [(0, 5200), (1, 4600), (2, 4600), (3, 4000), (10, 4000)]
)
def test_novelty_multiplier(similar: int, total: int) -> None:
    assert plan_budget(analysis(complexity=5, similar=similar)).total == total


def test_refinement_from_attempt_type_or_rejected_turn() -> None:
    assert plan_budget(analysis(complexity=5, refinement_attempt=1)).total == 4800
    assert plan_budget(analysis(complexity=5, task_type="refine")).total == 4800
    assert not analysis(complexity=5, rejected=True).is_refinement  # not a player-coach run
    assert analysis(complexity=5, rejected=True, is_autobuild=True).is_refinement


def test_player_coach_multipliers() -> None:
    # Floors at each step: 4000 -> 4600 (turn > 1) -> 5060 (turn history).
    assert plan_budget(analysis(complexity=5, is_autobuild=True, turn_number=1)).total == 4000
    assert plan_budget(analysis(complexity=5, is_autobuild=True, turn_number=2)).total == 4600
    assert plan_budget(
        analysis(complexity=5, is_autobuild=True, turn_number=2, has_previous_turns=True)
    ).total == 5060
    # Turn history counts only in player-coach runs.
    assert plan_budget(analysis(complexity=5, has_previous_turns=True, turn_number=3)).total == 4000


def test_multipliers_compound_and_round_down() -> None:
    # complexity 2, first of type, refinement, later turn with history:
    # 2000 -> 2600 -> 3120 -> 3588 -> 3946 (3946.8 rounded down)
    a = analysis(
        complexity=2, similar=0, refinement_attempt=1, is_autobuild=True, turn_number=4,
        has_previous_turns=True,
    )
    assert plan_budget(a).total == 3946


# The design's worked scenarios, as our rules compute them (docs/CONTEXT.md lists the
# differences from the numbers the design states).
def test_scenario_1_first_implementation_task() -> None:
    a = analysis(complexity=3, similar=0, feature_id="FEAT-SKEL-001")
    assert plan_budget(a).total == 2600
    assert percent(a) == {
        C.ARCHITECTURE: 25, C.PATTERNS: Fraction(125, 6), C.SIMILAR_OUTCOMES: Fraction(125, 6),
        C.WARNINGS: Fraction(50, 3), C.FEATURE: Fraction(25, 2), C.DOMAIN: Fraction(25, 6),
    }


def test_scenario_2_refinement_after_failure() -> None:
    a = analysis(
        complexity=5, task_type="refinement", refinement_attempt=2,
        last_failure_type="circular_dependency",
    )
    assert plan_budget(a).total == 4800  # the design states 5,760
    assert percent(a) == {
        C.WARNINGS: 35, C.SIMILAR_OUTCOMES: 30, C.PATTERNS: 15, C.ARCHITECTURE: 10,
        C.FEATURE: 5, C.DOMAIN: 5,
    }
    # Other novelty readings: few similar tasks, or none.
    assert plan_budget(analysis(complexity=5, similar=2, task_type="refine")).total == 5520
    assert plan_budget(analysis(complexity=5, similar=0, task_type="refine")).total == 6240


def test_scenario_3_review() -> None:
    a = analysis(Phase.REVIEW, complexity=4, task_type="review")
    assert plan_budget(a).total == 4000
    p = percent(a)
    assert p[C.PATTERNS] == Fraction(200, 7)  # 30 / 105
    assert p[C.ARCHITECTURE] == Fraction(500, 21)  # 25 / 105
    assert p[C.SIMILAR_OUTCOMES] == p[C.FEATURE] == p[C.WARNINGS] == Fraction(100, 7)
    assert p[C.DOMAIN] == Fraction(100, 21)


def test_scenario_4_player_turn_3() -> None:
    listed = analysis(complexity=6, is_autobuild=True, turn_number=3, has_previous_turns=True)
    assert plan_budget(listed).total == 5060  # the design states 5,520
    p = percent(listed)
    assert p[C.TURN_STATES] == p[C.ROLE_CONSTRAINTS] == p[C.PATTERNS] == Fraction(1500, 110)
    # The rejection of turn 2 makes it a refinement, as the design's own split assumes.
    rejected = analysis(
        complexity=6, is_autobuild=True, turn_number=3, has_previous_turns=True, rejected=True
    )
    assert plan_budget(rejected).total == 6072
    p = percent(rejected)
    assert p[C.TURN_STATES] == Fraction(2000, 120)
    assert max(p, key=lambda c: p[c]) is C.TURN_STATES
    assert p[C.WARNINGS] == p[C.ROLE_CONSTRAINTS] == Fraction(1500, 120)


def test_coach_split_weights_gates() -> None:
    p = percent(analysis(complexity=5, is_autobuild=True, current_actor="coach", turn_number=1))
    assert p[C.QUALITY_GATES] == Fraction(1500, 107)
    assert p[C.ROLE_CONSTRAINTS] == Fraction(1200, 107)
    assert p[C.IMPLEMENTATION_MODES] == Fraction(500, 107)


def test_standard_split_has_no_player_coach_categories() -> None:
    assert set(plan_budget(analysis()).shares) == {
        C.FEATURE, C.SIMILAR_OUTCOMES, C.PATTERNS, C.ARCHITECTURE, C.WARNINGS, C.DOMAIN
    }


@given(
    complexity=st.integers(1, 10),
    similar=st.integers(0, 5),
    phase=st.sampled_from(Phase),
    task_type=st.sampled_from(["implementation", "review", "planning", "refine", "docs", "x"]),
    attempt=st.integers(0, 3),
    autobuild=st.booleans(),
    actor=st.sampled_from(["player", "coach"]),
    turn=st.integers(0, 6),
    previous=st.booleans(),
)
def test_split_sums_to_one_and_allocation_never_exceeds(
    complexity: int, similar: int, phase: Phase, task_type: str, attempt: int,
    autobuild: bool, actor: str, turn: int, previous: bool,
) -> None:
    budget = plan_budget(
        analysis(
            phase, similar=similar, complexity=complexity, task_type=task_type,
            refinement_attempt=attempt, is_autobuild=autobuild, current_actor=actor,
            turn_number=turn, has_previous_turns=previous,
        )
    )
    assert sum(budget.shares.values()) == 1
    assert all(s > 0 for s in budget.shares.values())
    assert sum(budget.allocate(budget.total).values()) <= budget.total
    assert 2000 <= budget.total <= 6000 * 13 * 12 * 115 * 11 // 100_000 + 1


def test_normalize_rejects_all_zero() -> None:
    assert normalize({C.WARNINGS: 3, C.DOMAIN: 1}) == {
        C.WARNINGS: Fraction(3, 4), C.DOMAIN: Fraction(1, 4)
    }
    with pytest.raises(ValueError):
        normalize({C.WARNINGS: 0})


def test_token_estimate_examples() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("The quick brown fox jumps.") == 7  # 26 bytes / 4, rounded up
    assert estimate_tokens('{"a":1}') == 7  # every symbol counts
    assert estimate_tokens("1234567") == 3  # digits in groups of three
    assert estimate_tokens("数据库") == 3  # each non-ASCII character at least one


@given(st.text(), st.text())
def test_token_estimate_is_subadditive(a: str, b: str) -> None:
    assert estimate_tokens(a + b) <= estimate_tokens(a) + estimate_tokens(b)


@given(st.text())
def test_token_estimate_is_monotone_in_prefixes(text: str) -> None:
    assert all(
        estimate_tokens(text[:i]) <= estimate_tokens(text) for i in range(0, len(text) + 1, 3)
    )


@given(st.text(), st.text())
def test_sizes_add_exactly_across_whitespace(a: str, b: str) -> None:
    assert measure(a + "\n") + measure(b) == measure(a + "\n" + b)
