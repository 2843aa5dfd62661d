"""What context is assembled for: a task, the phase of work it is in, and what it is about."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory.context.topic import topic as topic

Actor = Literal["player", "coach"]
TaskTypeName = Literal[
    "implementation", "review", "planning", "refinement", "documentation", "refine", "docs",
    "feature", "bugfix", "refactor", "scaffolding", "testing", "test", "tests",
]
"""The task types the command line and the MCP server accept: the five that analysis tells
apart and its aliases (``refine``, ``docs``), and the quality-gate types and their aliases
of the built-in knowledge (``seeds/data/quality_gates.yaml``). The API takes any string."""
TASK_TYPES: tuple[str, ...] = get_args(TaskTypeName)


class Phase(StrEnum):
    LOAD = "load"
    PLAN = "plan"
    IMPLEMENT = "implement"
    TEST = "test"
    REVIEW = "review"


class Task(BaseModel):
    """A task as an agent runner describes it. ``task_type`` is kept as given (``refine``,
    ``docs``, ``feature``, ...); analysis normalises it, and quality-gate look-ups see it raw.

    ``has_previous_turns`` None means "look in the store": analysis asks the turn-state API."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = "TASK"
    description: str
    task_type: str = "implementation"
    complexity: int = Field(default=5, ge=1, le=10)
    tech_stack: str | None = None
    feature_id: str | None = None
    refinement_attempt: int = Field(default=0, ge=0)
    last_failure_type: str | None = None
    is_autobuild: bool = False
    current_actor: Actor = "player"
    turn_number: int = Field(default=0, ge=0)
    has_previous_turns: bool | None = None
    spec: str | None = None
    """the spec (Auto-Claude's unit of work) the task belongs to"""
    isolation: Literal["project", "spec"] = "project"
    """``spec``: other specs' memories stay out of this context (``memory.context.isolation``);
    ``project`` (the default, as 003 recommends): every spec's memories may enter"""
    files: tuple[str, ...] = ()
    """the working set: files the work touches, relative to the project folder
    (``memory.context.workset``); their memories join the context"""
    areas: tuple[str, ...] = ()
    """folders the work touches besides the working set's (inferred: ``memory.context.areas``):
    their conventions join the context as a working file's area's do"""

    @field_validator("description")
    @classmethod
    def _description(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value
