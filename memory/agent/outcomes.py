"""How a task went: GuardKit's ``TaskOutcome`` (docs/architecture/graphiti-architecture.md),
accepted as written, with our earlier fields kept.

An outcome is keyed by its task, so capturing a task's outcome again replaces it (a task is
completed, blocked or cancelled: its latest state is the one that counts); a phase's outcome is
keyed by the task and what it says, so each phase keeps its own. Its ``OUT-XXXXXXXX`` id is
the first eight hex digits of the memory's stable id, so the same outcome always has the same
id, whichever process or layer wrote it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)

from backends.model import natural_key, utc
from memory.agent.records import OUTCOME_PREFIX as OUTCOME_PREFIX  # its earlier home
from memory.agent.records import ReadsAsMapping, body, folded
from memory.agent.records import outcome_id as outcome_id
from seeds.knowledge import Fraction

_ALWAYS = frozenset({"task_id", "success", "outcome", "description", "task_type",
                     "complexity", "turns", "session", "metadata"})


def _listed(value: Any) -> Any:
    """The design writes ``None`` for "no list"."""
    return () if value is None else value


OutcomeType = Annotated[
    Literal["task_completed", "task_blocked", "task_cancelled", "phase_completed"],
    BeforeValidator(folded),
]
Strings = Annotated[tuple[str, ...], BeforeValidator(_listed)]
Time = Annotated[datetime, AfterValidator(utc)]  # a time without a zone is read as UTC


class TaskOutcome(ReadsAsMapping, BaseModel):
    """How a task went. ``summary`` and ``task_title`` (the design's names) are read as
    ``outcome`` and ``description`` (ours); unknown fields are ignored, as they always were
    (the session splitter records more)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str = ""
    """``OUT-XXXXXXXX``; empty on outcomes recorded before ids"""
    outcome_type: OutcomeType = "task_completed"
    task_id: str = ""
    success: bool
    outcome: str = Field(default="", validation_alias=AliasChoices("outcome", "summary"))
    description: str = Field(default="", validation_alias=AliasChoices("description", "task_title"))
    task_requirements: str = ""
    approach_used: str | None = None
    patterns_used: Strings = ()
    problems_encountered: Strings = ()
    lessons_learned: Strings = ()
    tests_written: int | None = Field(default=None, ge=0)
    test_coverage: Fraction | None = None
    review_cycles: int | None = Field(default=None, ge=0)
    started_at: Time | None = None
    completed_at: Time | None = None
    duration_minutes: int | None = Field(default=None, ge=0)
    feature_id: str | None = None
    related_adr_ids: Strings = ()
    task_type: str | None = None
    complexity: int | None = None
    turns: int | None = None
    session: int | None = None
    metadata: dict[str, Any] = {}
    created_at: Time | None = None
    """when the record was made (the design's); the memory's own time when given"""

    @model_validator(mode="after")
    def _duration(self) -> TaskOutcome:
        """The design records the duration besides the times; when only the times are given,
        the duration is theirs."""
        if self.duration_minutes is None and self.started_at and self.completed_at:
            minutes = int((self.completed_at - self.started_at).total_seconds() // 60)
            if minutes >= 0:
                return self.model_copy(update={"duration_minutes": minutes})
        return self

    def body(self) -> dict[str, Any]:
        """As stored: our earlier fields always, the design's where given."""
        return body(self, _ALWAYS)

    @property
    def summary(self) -> str:
        return self.outcome

    @property
    def task_title(self) -> str:
        return self.description

    def key(self) -> str:
        """Its natural key: the task's, or for a phase, the task's and what it says."""
        if self.outcome_type == "phase_completed":
            return f"{self.task_id}#phase#{natural_key(self.outcome or self.description)}"
        return self.task_id

    def name(self) -> str:
        verdict = "succeeded" if self.success else "failed"
        if self.outcome_type != "task_completed":
            verdict = self.outcome_type.replace("_", " ")
        return f"{self.id} {self.task_id} {verdict}: {self.description or self.outcome}".strip()
