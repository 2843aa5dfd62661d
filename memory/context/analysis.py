"""Task analysis: what kind of task this is, how familiar, whether it is a retry, and how
similar tasks went. The rules are pure (``characterise``); ``analyze`` gathers the facts."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from backends.protocol import MemoryBackend
from memory.agent.memories import AgentMemory, SimilarOutcome
from memory.agent.turns import TurnState, feature_turns
from memory.context.task import Phase, Task, topic


class TaskType(StrEnum):
    IMPLEMENTATION = "implementation"
    REVIEW = "review"
    PLANNING = "planning"
    REFINEMENT = "refinement"
    DOCUMENTATION = "documentation"


_ALIASES = {"refine": TaskType.REFINEMENT, "docs": TaskType.DOCUMENTATION}

DEFAULT_AVG_TURNS = 3.0
DEFAULT_SUCCESS_RATE = 0.8


def normalize_task_type(raw: str) -> TaskType:
    """``refine`` -> refinement, ``docs`` -> documentation; anything unknown is implementation."""
    key = raw.strip().casefold()
    if key in _ALIASES:
        return _ALIASES[key]
    try:
        return TaskType(key)
    except ValueError:
        return TaskType.IMPLEMENTATION


@dataclass(frozen=True)
class Analysis:
    """The characteristics budget and retrieval are decided on."""

    task: Task
    phase: Phase
    task_type: TaskType
    similar_count: int
    is_refinement: bool
    has_previous_turns: bool
    avg_turns: float = DEFAULT_AVG_TURNS
    success_rate: float = DEFAULT_SUCCESS_RATE
    history: int = 0
    """How many past outcomes the averages come from (0: they are the defaults)."""
    outcomes: tuple[SimilarOutcome, ...] = ()
    """Past task outcomes found for the description, best first (any score)."""
    turns: tuple[TurnState, ...] = ()
    """The feature's turns before this one, oldest first (player-coach runs)."""

    @property
    def is_first_of_type(self) -> bool:
        return self.similar_count == 0


def characterise(
    task: Task,
    phase: Phase,
    *,
    similar_count: int,
    previous_turns: bool = False,
    previous_turn_rejected: bool = False,
    avg_turns: float = DEFAULT_AVG_TURNS,
    success_rate: float = DEFAULT_SUCCESS_RATE,
    history: int = 0,
) -> Analysis:
    """A task is a refinement when it says so (type or attempt number) or, in a player-coach
    run, when the coach sent the previous turn back: either way it is a retry after a failure."""
    task_type = normalize_task_type(task.task_type)
    has_previous = previous_turns if task.has_previous_turns is None else task.has_previous_turns
    return Analysis(
        task=task,
        phase=phase,
        task_type=task_type,
        similar_count=similar_count,
        is_refinement=(
            task.refinement_attempt > 0
            or task_type is TaskType.REFINEMENT
            or (task.is_autobuild and previous_turn_rejected)
        ),
        has_previous_turns=task.is_autobuild and has_previous,
        avg_turns=avg_turns,
        success_rate=success_rate,
        history=history,
    )


REJECTING_DECISIONS = frozenset({"revise", "escalate"})
OUTCOMES_CONSIDERED = 20


async def previous_turns(store: MemoryBackend, project_id: str, task: Task) -> list[TurnState]:
    """The feature's recorded turns before this task's current one, oldest first."""
    if not (task.is_autobuild and task.feature_id):
        return []
    turns = await feature_turns(store, project_id, task.feature_id)
    return [
        t for t in turns
        if not (t.task_id == task.id and task.turn_number and t.turn >= task.turn_number)
    ]


def averages(outcomes: Sequence[SimilarOutcome], threshold: float) -> tuple[float, float, int]:
    """Mean turns and success rate of the past outcomes relevant to the task (score at least
    ``threshold``), and how many there were; the defaults when there are none."""
    relevant = [o.outcome for o in outcomes if o.score >= threshold]
    turns = [o.turns for o in relevant if o.turns is not None]
    return (
        sum(turns) / len(turns) if turns else DEFAULT_AVG_TURNS,
        sum(o.success for o in relevant) / len(relevant) if relevant else DEFAULT_SUCCESS_RATE,
        len(relevant),
    )


async def analyze(
    memory: AgentMemory,
    task: Task,
    phase: Phase,
    *,
    similar_threshold: float,
    relevance_threshold: float,
) -> Analysis:
    """Novelty from the outcomes of similar past tasks; history from the feature's turns."""
    outcomes, turns = await asyncio.gather(
        memory.get_similar_task_outcomes(topic(task.description), OUTCOMES_CONSIDERED),
        previous_turns(memory.store, memory.project_id, task),
    )
    avg_turns, success_rate, history = averages(outcomes, relevance_threshold)
    own = [t for t in turns if t.task_id == task.id]
    analysis = characterise(
        task,
        phase,
        similar_count=sum(1 for o in outcomes if o.score >= similar_threshold),
        previous_turns=bool(turns),
        previous_turn_rejected=bool(own) and own[-1].coach_decision in REJECTING_DECISIONS,
        avg_turns=avg_turns,
        success_rate=success_rate,
        history=history,
    )
    return replace(analysis, outcomes=tuple(outcomes), turns=tuple(turns))
