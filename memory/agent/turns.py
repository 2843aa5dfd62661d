"""Turn states of player-coach runs: recorded at the end of each turn, loaded back exactly.

A turn state lives in ``<project>__turn_states`` under the natural key
``TURN-{feature}-{task}-T{n}``, so recording a turn again replaces it. Loading never searches:
it scans the (small, pruned) group and orders by turn number and time.

Ordering: within one task, by turn number, then time; across a feature's tasks, by time, then
turn number (a later task's turn 1 is newer than an earlier task's turn 5).

Retention after every record (FEAT-GE-001): a turn of a feature still in progress is never
pruned. A completed feature keeps its newest ``per_feature`` turns; then, while the project
holds more than ``per_project``, the oldest turns of completed features go first. A project
whose running features alone exceed a limit keeps every turn; ``retention_status`` says so,
and ``dualmem status`` shows it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from backends.errors import InvalidEpisode
from backends.model import Episode, Receipt, now, problems, utc
from backends.protocol import MemoryBackend
from memory.agent.records import ReadsAsMapping, scan_records, without_entity_type
from memory.agent.scopes import TURN_STATE, turn_states_group

CoachDecision = Literal["approve", "revise", "escalate"]
CriterionStatus = Literal["verified", "pending", "rejected", "blocked"]
"""FEAT-GE-001's statuses of an acceptance criterion; other words are kept as written."""
TurnMode = Literal["FRESH_START", "RECOVERING_STATE", "CONTINUING_WORK"]
"""How a turn began (the design's modes); other values are kept as written."""
FeatureStatus = Literal["in_progress", "completed"]
_NULL_MEANS_NONE = frozenset({"quality_gate_results", "gate_results"})


def turn_id(feature_id: str, task_id: str, turn: int) -> str:
    """``TURN-{feature}-{task}-T{n}``: the natural key of a turn state."""
    return f"TURN-{feature_id}-{task_id}-T{turn}"


# The documents' other words for a verdict: 000 writes ``approved``, 004 ``REJECTED`` and
# ``FEEDBACK`` (both send the player back to work, which is ``revise``).
_DECISION_WORDS = {"approved": "approve", "rejected": "revise", "feedback": "revise",
                   "escalated": "escalate"}


def _coach_decision(value: Any) -> Any:
    """The design writes ``""`` for "no verdict yet" and shows verdicts in capitals."""
    if value == "":
        return None
    if not isinstance(value, str):
        return value
    word = value.strip().casefold()
    return _DECISION_WORDS.get(word, word)


def _timestamp(value: Any) -> Any:
    """FEAT-GE-001's default timestamp is ``""``: not given, so now."""
    return now() if value in ("", None) else value


class TurnState(ReadsAsMapping, BaseModel):
    """What a turn ended with: FEAT-GE-001's ``TurnStateEpisode`` as written (its field names,
    ``entity_type`` included), and ours as aliases (``turn``, ``blockers``,
    ``acceptance_criteria``, ``gate_results``, ``recorded_at``). ``coach_feedback`` and
    ``feature_status`` are ours: the coach's reasons, and whether the feature is done, which
    decides what retention may prune."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    feature_id: str = Field(min_length=1)
    task_id: str = Field(min_length=1)
    turn_number: int = Field(ge=0, validation_alias=AliasChoices("turn_number", "turn"))
    """FEAT-GE-001's default is 0 (a turn not yet numbered); the feature-build's turns are 1.."""
    player_summary: str = ""
    """what the player did (000's ``TurnStateEntity``)"""
    player_decision: str = ""
    coach_decision: Annotated[CoachDecision | None, BeforeValidator(_coach_decision)] = None
    coach_feedback: str = Field(
        default="", validation_alias=AliasChoices("coach_feedback", "feedback_summary"))
    blockers_found: tuple[str, ...] = Field(
        default=(), validation_alias=AliasChoices("blockers_found", "blockers")
    )
    progress_summary: str = ""
    acceptance_criteria_status: dict[str, CriterionStatus | str] = Field(
        default={},
        validation_alias=AliasChoices("acceptance_criteria_status", "acceptance_criteria"),
    )
    mode: TurnMode | str | None = "FRESH_START"
    quality_gate_results: dict[str, Any] = Field(
        default={}, validation_alias=AliasChoices("quality_gate_results", "gate_results")
    )
    feature_status: FeatureStatus = "in_progress"
    timestamp: Annotated[datetime, BeforeValidator(_timestamp), AfterValidator(utc)] = Field(
        default_factory=now, validation_alias=AliasChoices("timestamp", "recorded_at")
    )

    @model_validator(mode="before")
    @classmethod
    def _design_episode(cls, data: Any) -> Any:
        """The design's episode names its kind in the body and writes ``null`` for no gate
        results."""
        data = without_entity_type(data, TURN_STATE)
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if v is not None or k not in _NULL_MEANS_NONE}
        return data

    # Our earlier names, for reading.
    @property
    def turn(self) -> int:
        return self.turn_number

    @property
    def blockers(self) -> tuple[str, ...]:
        return self.blockers_found

    @property
    def acceptance_criteria(self) -> dict[str, str]:
        return self.acceptance_criteria_status

    @property
    def gate_results(self) -> dict[str, Any]:
        return self.quality_gate_results

    @property
    def recorded_at(self) -> datetime:
        return self.timestamp

    @property
    def feedback_summary(self) -> str:
        """FEAT-GR-006's name for the coach's feedback."""
        return self.coach_feedback

    @property
    def turn_id(self) -> str:
        return turn_id(self.feature_id, self.task_id, self.turn_number)

    @classmethod
    def from_json(cls, text: str, where: str = "turn state") -> TurnState:
        try:
            return cls.model_validate_json(text)
        except ValidationError as exc:
            raise InvalidEpisode(f"{where}: not a turn state: {problems(exc)}") from None

    def summary(self) -> str:
        """One line: which turn, when, the coach's decision, progress and feedback."""
        parts = [f"{self.turn_id}  {self.timestamp:%Y-%m-%d %H:%M}",
                 f"coach {self.coach_decision or 'pending'}"]
        parts += [text for text in (self.progress_summary, self.coach_feedback) if text]
        parts += [f"blocked: {blocker}" for blocker in self.blockers_found]
        return " | ".join(parts)

    def to_episode(self, project_id: str) -> Episode:
        decision = self.coach_decision or "pending"
        return Episode.create(
            group_id=turn_states_group(project_id), kind=TURN_STATE,
            name=f"{self.turn_id}: coach {decision}", body=self.model_dump(mode="json"),
            key=self.turn_id, source="feature_build", created_at=self.timestamp,
        )


@dataclass(frozen=True)
class Retention:
    per_feature: int = 50
    per_project: int = 200


@dataclass(frozen=True)
class RetentionStatus:
    """The project's turns against the limits, and the running features that keep it over."""

    turns: int
    limits: Retention
    running_over: dict[str, int]
    """running features holding more than ``per_feature`` turns: feature -> turns"""
    running_turns: int

    @property
    def over_project(self) -> bool:
        return self.turns > self.limits.per_project

    @property
    def over(self) -> bool:
        return self.over_project or bool(self.running_over)

    def to_json(self) -> dict[str, Any]:
        return {
            "turns": self.turns, "per_feature": self.limits.per_feature,
            "per_project": self.limits.per_project, "running_turns": self.running_turns,
            "running_features_over": self.running_over,
        }

    def describe(self) -> str:
        if not self.over:
            return f"turn states: {self.turns} (limits {self.limits.per_feature} a feature, " \
                f"{self.limits.per_project} a project)"
        lines = [f"turn states: {self.turns}, over the limits ({self.limits.per_feature} a "
                 f"feature, {self.limits.per_project} a project): turns of running features "
                 f"are kept until they complete ({self.running_turns} running)"]
        lines += [f"  {feature}: {count} turns, running" for feature, count
                  in sorted(self.running_over.items())]
        return "\n".join(lines)


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


def create_turn_state_from_autobuild(**fields: Any) -> TurnState:
    """000's ``create_turn_state_from_autobuild``: a turn state from the run's fields, as the
    design names them (``player_summary``, ``coach_decision="approved"``, ...);
    ``InvalidEpisode`` naming what is wrong."""
    try:
        return TurnState.model_validate(fields)
    except ValidationError as exc:
        raise InvalidEpisode(f"not a turn state: {problems(exc)}") from None


async def capture_turn_state(
    store: MemoryBackend, entity: TurnState, *, project_id: str
) -> Receipt:
    """000's ``capture_turn_state(graphiti, entity)``: ``record_turn`` under the design's name
    (the project is named, not taken from a global client)."""
    return await record_turn(store, project_id, entity)


Turns = list[tuple[Episode, TurnState]]


def _by_feature(items: Turns) -> dict[str, Turns]:
    """Each feature's turns, oldest first."""
    grouped: dict[str, Turns] = defaultdict(list)
    for item in items:
        grouped[item[1].feature_id].append(item)
    for found in grouped.values():
        found.sort(key=_by_time)
    return grouped


def _completed(items: Turns) -> bool:
    """A feature is completed when its newest turn says so."""
    return items[-1][1].feature_status == "completed"


async def prune_turns(store: MemoryBackend, project_id: str, retention: Retention) -> list[str]:
    """Apply the retention limits (see the module docstring); returns the pruned turn ids."""
    doomed: Turns = []
    kept = 0
    prunable: Turns = []
    for items in _by_feature(await _all_turns(store, project_id)).values():
        if not _completed(items):
            kept += len(items)
            continue
        cut = max(len(items) - retention.per_feature, 0)
        doomed += items[:cut]
        prunable += items[cut:]
        kept += len(items) - cut
    excess = kept - retention.per_project
    if excess > 0:
        doomed += sorted(prunable, key=_by_time)[:excess]
    for episode, _ in doomed:
        await store.delete(episode.id)
    return [state.turn_id for _, state in doomed]


async def retention_status(
    store: MemoryBackend, project_id: str, retention: Retention | None = None
) -> RetentionStatus:
    """How the project's turn states stand against the limits (after pruning, only running
    features can keep it over them)."""
    limits = retention or Retention()
    grouped = _by_feature(await _all_turns(store, project_id))
    running = {feature: len(items) for feature, items in grouped.items() if not _completed(items)}
    return RetentionStatus(
        turns=sum(len(items) for items in grouped.values()),
        limits=limits,
        running_over={f: n for f, n in running.items() if n > limits.per_feature},
        running_turns=sum(running.values()),
    )
