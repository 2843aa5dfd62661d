"""Job-specific context: the memories a task needs, within a token budget (FEAT-GR-006).

    result = await build_context(store, Task(description="Add a ping tool"), project_id=pid)
    print(result.markdown)  # never more than result.budget tokens (``estimate_tokens``)

Rules and calibration: docs/CONTEXT.md.
"""

import typing

from backends.lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from memory.context.analysis import Analysis, TaskType, characterise, normalize_task_type
    from memory.context.assemble import CategoryStats, ContextResult, build_context
    from memory.context.budget import Budget, Category, plan_budget
    from memory.context.cache import CachedStore
    from memory.context.coach import build_coach_prompt
    from memory.context.critical import (
        ContextFormatterConfig,
        CriticalContext,
        format_context_for_injection,
        load_critical_context,
    )
    from memory.context.task import TASK_TYPES, Phase, Task, TaskTypeName
    from memory.context.thresholds import Thresholds
    from memory.context.tokens import estimate_tokens

__all__ = [
    "TASK_TYPES",
    "Analysis",
    "Budget",
    "CachedStore",
    "Category",
    "CategoryStats",
    "ContextFormatterConfig",
    "ContextResult",
    "CriticalContext",
    "Phase",
    "Task",
    "TaskType",
    "TaskTypeName",
    "Thresholds",
    "build_coach_prompt",
    "build_context",
    "characterise",
    "estimate_tokens",
    "format_context_for_injection",
    "load_critical_context",
    "normalize_task_type",
    "plan_budget",
]

_SOURCES: dict[str, tuple[str, ...]] = {
    "memory.context.analysis": ("Analysis", "TaskType", "characterise", "normalize_task_type"),
    "memory.context.assemble": ("CategoryStats", "ContextResult", "build_context"),
    "memory.context.budget": ("Budget", "Category", "plan_budget"),
    "memory.context.cache": ("CachedStore",),
    "memory.context.coach": ("build_coach_prompt",),
    "memory.context.critical": (
        "ContextFormatterConfig", "CriticalContext", "format_context_for_injection",
        "load_critical_context",
    ),
    "memory.context.thresholds": ("Thresholds",),
    "memory.context.task": ("TASK_TYPES", "Phase", "Task", "TaskTypeName"),
    "memory.context.tokens": ("estimate_tokens",),
}

if not typing.TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, _SOURCES)
