"""Job-specific context: the memories a task needs, within a token budget (FEAT-GR-006).

    result = await build_context(store, Task(description="Add a ping tool"), project_id=pid)
    print(result.markdown)  # never more than result.budget tokens (``estimate_tokens``)

Rules and calibration: docs/CONTEXT.md.
"""

from memory.context.analysis import Analysis, TaskType, characterise, normalize_task_type
from memory.context.assemble import CategoryStats, ContextResult, build_context
from memory.context.budget import Budget, Category, plan_budget
from memory.context.cache import CachedStore
from memory.context.coach import build_coach_prompt
from memory.context.retrieval import Thresholds
from memory.context.task import Phase, Task
from memory.context.tokens import estimate_tokens

__all__ = [
    "Analysis",
    "Budget",
    "CachedStore",
    "Category",
    "CategoryStats",
    "ContextResult",
    "Phase",
    "Task",
    "TaskType",
    "Thresholds",
    "build_coach_prompt",
    "build_context",
    "characterise",
    "estimate_tokens",
    "normalize_task_type",
    "plan_budget",
]
