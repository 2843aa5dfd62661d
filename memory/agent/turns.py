"""Turn states of player-coach runs: recorded at the end of each turn, loaded back exactly.

A turn state lives in ``<project>__turn_states`` under the natural key
``TURN-{feature}-{task}-T{n}``, so recording a turn again replaces it. Loading never searches:
it scans the (small, pruned) group and orders by turn number and time.

Ordering: within one task, by turn number, then time; across a feature's tasks, by time, then
turn number (a later task's turn 1 is newer than an earlier task's turn 5).

Retention after every record: each feature keeps its newest ``per_feature`` turns (so a running
feature always keeps its recent state); then, while the project holds more than
``per_project``, the oldest turns of completed features go first. Turns of a feature still in
progress are never taken for the project limit, so a project whose features are all running
may hold more than ``per_project`` (at most ``per_feature`` per feature).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from backends.errors import InvalidEpisode
from backends.model import Episode, Receipt, now, problems, utc
from backends.protocol import MemoryBackend
from memory.agent.records import scan_records
from memory.agent.scopes import TURN_STATE, turn_states_group

CoachDecision = Literal["approve", "revise", "escalate"]
FeatureStatus = Literal["in_progress", "completed"]


def turn_id(feature_id: str, task_id: str, turn: int) -> str:
    """``TURN-{feature}-{task}-T{n}``: the natural key of a turn state."""
    return f"TURN-{feature_id}-{task_id}-T{turn}"


class TurnState(BaseModel):
    """What a turn ended with. ``feature_status`` says whether the feature is done, which
    decides what retention may prune."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    feature_id: str = Field(min_length=1)
    task_id: str = Field(min_length=1)
    turn: int = Field(ge=1)
    player_decision: str = ""
    coach_decision: CoachDecision | None = None
    coach_feedback: str = ""
    blockers: tuple[str, ...] = ()
    progress_summary: str = ""
    acceptance_criteria: dict[str, str] = {}  # criterion -> status (met, unmet, partial, ...)
    mode: str | None = None
    gate_results: dict[str, Any] = {}
    feature_status: FeatureStatus = "in_progress"
    recorded_at: Annotated[datetime, AfterValidator(utc)] = Field(default_factory=now)

    @property
    def turn_id(self) -> str:
        return turn_id(self.feature_id, self.task_id, self.turn)

    @classmethod
    def from_json(cls, text: str, where: str = "turn state") -> TurnState:
        try:
            return cls.model_validate_json(text)
        except ValidationError as exc:
            raise InvalidEpisode(f"{where}: not a turn state: {problems(exc)}") from None

    def summary(self) -> str:
        """One line: which turn, when, the coach's decision, progress and feedback."""
        parts = [f"{self.turn_id}  {self.recorded_at:%Y-%m-%d %H:%M}",
                 f"coach {self.coach_decision or 'pending'}"]
        parts += [text for text in (self.progress_summary, self.coach_feedback) if text]
        parts += [f"blocked: {blocker}" for blocker in self.blockers]
        return " | ".join(parts)

    def to_episode(self, project_id: str) -> Episode:
        decision = self.coach_decision or "pending"
        return Episode.create(
            group_id=turn_states_group(project_id), kind=TURN_STATE,
            name=f"{self.turn_id}: coach {decision}", body=self.model_dump(mode="json"),
            key=self.turn_id, source="feature_build", created_at=self.recorded_at,
        )


@dataclass(frozen=True)
class Retention:
    per_feature: int = 50
    per_project: int = 200


async def _all_turns(store: MemoryBackend, project_id: str) -> list[tuple[Episode, TurnState]]:
    return await scan_records(store, [turn_states_group(project_id)], TURN_STATE, TurnState)


def _by_time(item: tuple[Episode, TurnState]) -> tuple[datetime, int, str]:
    return item[1].recorded_at, item[1].turn, item[0].id


async def feature_turns(
    store: MemoryBackend, project_id: str, feature_id: str, task_id: str | None = None
) -> list[TurnState]:
    """The feature's turn states (of one task, when given), oldest first."""
    found = [
        (episode, state) for episode, state in await _all_turns(store, project_id)
        if state.feature_id == feature_id and (task_id is None or state.task_id == task_id)
    ]
    if task_id is None:
        found.sort(key=_by_time)
    else:
        found.sort(key=lambda item: (item[1].turn, *_by_time(item)))
    return [state for _, state in found]


async def latest_turn(
    store: MemoryBackend, project_id: str, feature_id: str, task_id: str | None = None
) -> TurnState | None:
    """The newest turn state of the feature (of one task, when given), or None."""
    turns = await feature_turns(store, project_id, feature_id, task_id)
    return turns[-1] if turns else None


async def previous_turn(
    store: MemoryBackend, project_id: str, feature_id: str, task_id: str, turn: int
) -> TurnState | None:
    """What turn ``turn`` of a task starts from: the latest earlier turn (turn 1 gets None)."""
    earlier = [
        state for state in await feature_turns(store, project_id, feature_id, task_id)
        if state.turn < turn
    ]
    return earlier[-1] if earlier else None


async def record_turn(
    store: MemoryBackend, project_id: str, state: TurnState, retention: Retention | None = None
) -> Receipt:
    """Store the turn (replacing an earlier record of the same turn), then apply retention."""
    receipt = await store.upsert(state.to_episode(project_id))
    await prune_turns(store, project_id, retention or Retention())
    return receipt


async def prune_turns(store: MemoryBackend, project_id: str, retention: Retention) -> list[str]:
    """Apply the retention limits (see the module docstring); returns the pruned turn ids."""
    by_feature: dict[str, list[tuple[Episode, TurnState]]] = defaultdict(list)
    for item in await _all_turns(store, project_id):
        by_feature[item[1].feature_id].append(item)
    doomed: list[tuple[Episode, TurnState]] = []
    kept: list[tuple[Episode, TurnState]] = []
    completed: set[str] = set()
    for feature_id, items in by_feature.items():
        items.sort(key=_by_time)
        if items[-1][1].feature_status == "completed":
            completed.add(feature_id)
        cut = max(len(items) - retention.per_feature, 0)
        doomed += items[:cut]
        kept += items[cut:]
    excess = len(kept) - retention.per_project
    if excess > 0:
        prunable = sorted((item for item in kept if item[1].feature_id in completed), key=_by_time)
        doomed += prunable[:excess]
    for episode, _ in doomed:
        await store.delete(episode.id)
    return [state.turn_id for _, state in doomed]
