"""The coach's prompt context (FEAT-GE-001): its role constraints with the project's
overrides, the gate thresholds for the task's type and complexity, and, when continuing, the
state the previous turn ended in. Whole, not budgeted: each part is short and all are needed."""

from __future__ import annotations

from backends.protocol import MemoryBackend
from memory.agent.knowledge import system_knowledge
from memory.agent.turns import previous_turn
from memory.context.budget import Category
from memory.context.format import gate_block, role_blocks, section, turn_context
from memory.context.task import Task
from seeds import Overrides


async def build_coach_prompt(
    store: MemoryBackend, task: Task, *, project_id: str, overrides: Overrides | None = None
) -> str:
    knowledge = await system_knowledge(store, overrides)
    gate = knowledge.gate(task.task_type, task.complexity)
    parts = [
        section(Category.ROLE_CONSTRAINTS, role_blocks(knowledge.role("coach")), "coach"),
        section(Category.QUALITY_GATES, [gate_block(gate)]),
    ]
    if task.feature_id and task.turn_number > 1:
        state = await previous_turn(store, project_id, task.feature_id, task.id, task.turn_number)
        if state is not None:
            parts.append(turn_context(state, task.turn_number))
    return "".join(parts)
