"""The coach's prompt context (FEAT-GE-001), in the design's injected format: its role
constraints with the project's overrides ("## Your Role: Coach"), the gate thresholds for the
task's type and complexity ("## Quality Gates for This Task"), and, when continuing, the state
the previous turn ended in. Whole, not budgeted: each part is short and all are needed."""

from __future__ import annotations

from backends.protocol import MemoryBackend
from memory.agent.knowledge import system_knowledge
from memory.agent.turns import previous_turn
from memory.context.format import percent, turn_context
from memory.context.task import Task
from seeds import Overrides, QualityGateProfile, RoleConstraints


def role_section(constraints: RoleConstraints) -> str:
    lines = [f"## Your Role: {constraints.role.title()}"]
    for label, items in (("You MUST", constraints.must_do),
                         ("You MUST NOT", constraints.must_not_do),
                         ("ASK before", constraints.ask_before),
                         ("ESCALATE when", constraints.escalate_when)):
        if items:
            lines.append(f"{label}: {' | '.join(items)}")
    return "\n".join(lines) + "\n"


def gates_section(gate: QualityGateProfile, task_type: str, complexity: int) -> str:
    def required(needed: bool, threshold: str) -> str:
        return f"required (threshold: {threshold})" if needed else "not required"

    coverage = gate.coverage_threshold
    tests = "not required"
    if gate.tests_required:
        tests = "required, must pass" if gate.tests_must_pass else "required"
    return "\n".join([
        "## Quality Gates for This Task",
        f"Task type: {task_type} | Complexity: {complexity}",
        "Architecture review: " + required(gate.arch_review_required,
                                           str(gate.arch_review_threshold)),
        "Coverage: " + required(gate.coverage_required and coverage is not None,
                                percent(coverage or 0)),
        f"Tests: {tests}",
        "DO NOT adjust these thresholds during this session.",
    ]) + "\n"


async def build_coach_prompt(
    store: MemoryBackend, task: Task, *, project_id: str, overrides: Overrides | None = None
) -> str:
    knowledge = await system_knowledge(store, overrides)
    task_type = knowledge.canonical_task_type(task.task_type)
    gate = knowledge.gate(task.task_type, task.complexity)
    parts = [role_section(knowledge.role("coach")),
             gates_section(gate, task_type, task.complexity)]
    if task.feature_id and task.turn_number > 1:
        state = await previous_turn(store, project_id, task.feature_id, task.id, task.turn_number)
        if state is not None:
            parts.append(turn_context(state, task.turn_number).replace("### ", "## ", 1))
    return "\n".join(parts)
