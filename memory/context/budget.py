"""The token budget of a task and its split across context categories (FEAT-GR-006 rules).

Multipliers apply in this order, each rounded down in exact integer arithmetic: novelty,
refinement, later turn, turn history. Allocation rules are applied in table order, a later
rule overriding the shares an earlier one set, then normalised to sum to 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

from memory.context.analysis import Analysis, TaskType
from memory.context.task import Phase


class Category(StrEnum):
    FEATURE = "feature_context"
    SIMILAR_OUTCOMES = "similar_outcomes"
    PATTERNS = "relevant_patterns"
    ARCHITECTURE = "architecture_context"
    WARNINGS = "warnings"
    DOMAIN = "domain_knowledge"
    ROLE_CONSTRAINTS = "role_constraints"
    QUALITY_GATES = "quality_gate_configs"
    TURN_STATES = "turn_states"
    IMPLEMENTATION_MODES = "implementation_modes"


C = Category

BASE_TOKENS = ((3, 2000), (6, 4000), (10, 6000))  # (highest complexity, tokens)
FEW_SIMILAR = 3  # fewer similar past tasks than this still earns a bonus

# Percentages: x1.3 first of type, else x1.15 with few similar; x1.2 refinement;
# player-coach: x1.15 after turn 1, x1.10 with turn history to load.
FIRST_OF_TYPE_PCT = 130
FEW_SIMILAR_PCT = 115
REFINEMENT_PCT = 120
LATER_TURN_PCT = 115
TURN_HISTORY_PCT = 110

DEFAULT_SPLIT: Mapping[Category, int] = {
    C.FEATURE: 15, C.SIMILAR_OUTCOMES: 25, C.PATTERNS: 20,
    C.ARCHITECTURE: 20, C.WARNINGS: 15, C.DOMAIN: 5,
}
AUTOBUILD_SPLIT: Mapping[Category, int] = {
    C.FEATURE: 10, C.SIMILAR_OUTCOMES: 15, C.PATTERNS: 15, C.ARCHITECTURE: 10,
    C.WARNINGS: 10, C.DOMAIN: 5, C.ROLE_CONSTRAINTS: 10, C.QUALITY_GATES: 10,
    C.TURN_STATES: 10, C.IMPLEMENTATION_MODES: 5,
}


@dataclass(frozen=True)
class Rule:
    name: str
    applies: Callable[[Analysis], bool]
    sets: Mapping[Category, int]


STANDARD_RULES = (
    Rule("review task", lambda a: a.task_type is TaskType.REVIEW,
         {C.PATTERNS: 30, C.ARCHITECTURE: 25, C.SIMILAR_OUTCOMES: 15}),
    Rule("planning task", lambda a: a.task_type is TaskType.PLANNING,
         {C.FEATURE: 25, C.ARCHITECTURE: 30, C.SIMILAR_OUTCOMES: 15}),
    Rule("implement phase", lambda a: a.phase is Phase.IMPLEMENT, {C.PATTERNS: 30, C.WARNINGS: 20}),
    Rule("test phase", lambda a: a.phase is Phase.TEST, {C.SIMILAR_OUTCOMES: 35}),
    Rule("refinement", lambda a: a.is_refinement,
         {C.WARNINGS: 35, C.SIMILAR_OUTCOMES: 30, C.PATTERNS: 15, C.ARCHITECTURE: 10,
          C.FEATURE: 5, C.DOMAIN: 5}),
    Rule("first of its type", lambda a: a.is_first_of_type, {C.ARCHITECTURE: 30, C.PATTERNS: 25}),
)
AUTOBUILD_RULES = (
    Rule("player", lambda a: a.task.current_actor == "player",
         {C.ROLE_CONSTRAINTS: 15, C.IMPLEMENTATION_MODES: 10}),
    Rule("coach", lambda a: a.task.current_actor == "coach",
         {C.ROLE_CONSTRAINTS: 12, C.QUALITY_GATES: 15}),
    Rule("turn > 1", lambda a: a.task.turn_number > 1, {C.TURN_STATES: 15, C.SIMILAR_OUTCOMES: 10}),
    Rule("refinement", lambda a: a.is_refinement, {C.TURN_STATES: 20, C.WARNINGS: 15}),
)


@dataclass(frozen=True)
class Budget:
    total: int
    shares: Mapping[Category, Fraction]
    """Each category's share of the tokens left after the header; they sum to 1."""

    def allocate(self, available: int) -> dict[Category, int]:
        """Tokens per category out of ``available``, rounded down so they never sum above it."""
        return {c: int(available * s) for c, s in self.shares.items()}


def normalize(weights: Mapping[Category, float | int | Fraction]) -> dict[Category, Fraction]:
    """Shares proportional to ``weights``, exact, summing to 1; zero weights are dropped."""
    exact = {c: Fraction(w).limit_denominator(10**6) for c, w in weights.items() if w > 0}
    total = sum(exact.values())
    if total <= 0:
        raise ValueError("at least one category needs a positive share")
    return {c: w / total for c, w in exact.items()}


def total_tokens(analysis: Analysis) -> int:
    task = analysis.task
    total = next(tokens for top, tokens in BASE_TOKENS if task.complexity <= top)
    if analysis.is_first_of_type:
        total = total * FIRST_OF_TYPE_PCT // 100
    elif analysis.similar_count < FEW_SIMILAR:
        total = total * FEW_SIMILAR_PCT // 100
    if analysis.is_refinement:
        total = total * REFINEMENT_PCT // 100
    if task.is_autobuild:
        if task.turn_number > 1:
            total = total * LATER_TURN_PCT // 100
        if analysis.has_previous_turns:
            total = total * TURN_HISTORY_PCT // 100
    return total


def split(analysis: Analysis) -> dict[Category, Fraction]:
    base, rules = (
        (AUTOBUILD_SPLIT, AUTOBUILD_RULES) if analysis.task.is_autobuild
        else (DEFAULT_SPLIT, STANDARD_RULES)
    )
    weights = dict(base)
    for rule in rules:
        if rule.applies(analysis):
            weights.update(rule.sets)
    return normalize(weights)


def plan_budget(analysis: Analysis) -> Budget:
    return Budget(total_tokens(analysis), split(analysis))
