"""``build_context``: analyse the task, plan its budget, retrieve per category, trim and
render. The result never exceeds the budget: the header is reserved first (at its largest,
with "used" written as the total), each section is trimmed to its allocation of the rest, and
the estimate of a concatenation is at most the sum of its parts' estimates."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from backends.model import Episode, now
from backends.protocol import MemoryBackend
from memory.agent.knowledge import system_knowledge
from memory.agent.memories import AgentMemory, TaskOutcome
from memory.agent.records import parse
from memory.context.analysis import Analysis, analyze
from memory.context.areas import AreaGuess, with_areas
from memory.context.budget import Budget, Category, normalize, plan_budget
from memory.context.expansion import DEFAULT_EXPANDERS, Expander
from memory.context.format import (
    Block,
    episode_block,
    gate_block,
    header,
    mode_blocks,
    outcome_block,
    role_blocks,
    section,
    section_head,
    turn_block,
)
from memory.context.isolation import isolated
from memory.context.retrieval import fit, project_groups, search_categories
from memory.context.selection import select
from memory.context.task import Phase, Task
from memory.context.thresholds import Thresholds
from memory.context.tokens import estimate_tokens, measure
from seeds import Overrides, SystemKnowledge

C = Category
SYSTEM_CATEGORIES = (C.ROLE_CONSTRAINTS, C.QUALITY_GATES, C.IMPLEMENTATION_MODES)
FULL_PCT = 95  # a context this full of its budget takes nothing more (the design's rule)


@dataclass(frozen=True)
class CategoryStats:
    share: float
    allocated: int
    """Tokens the category may use (its share of the budget left after the header)."""
    used: int
    candidates: int
    """Blocks it had to choose from: relevant memories, or lines of system knowledge."""
    kept: int
    borrowed: int = 0
    """Tokens it took beyond its allocation, from what other categories left unused."""


@dataclass(frozen=True)
class ContextResult:
    markdown: str
    tokens_used: int
    budget: int
    analysis: Analysis
    categories: Mapping[Category, CategoryStats]
    memories: Mapping[Category, tuple[Episode, ...]] = field(default_factory=dict)
    """the memories the context shows, per category, as shown (the design's items per
    category: an agent can cite, read or correct them by id)"""

    def to_json(self) -> dict[str, Any]:
        a = self.analysis
        return {
            "task_id": a.task.id,
            "tokens_used": self.tokens_used,
            "budget": self.budget,
            "analysis": {
                "task_type": a.task_type.value,
                "phase": a.phase.value,
                "complexity": a.task.complexity,
                "similar_tasks": a.similar_count,
                "first_of_type": a.is_first_of_type,
                "refinement": a.is_refinement,
                "previous_turns": len(a.turns),
                "areas": list(a.task.areas),
                "history": a.history,
                "avg_turns": a.avg_turns,
                "success_rate": a.success_rate,
            },
            "categories": {c.value: vars(s) for c, s in self.categories.items()},
            "memories": {c.value: [{"id": e.id, "group_id": e.group_id, "kind": e.kind,
                                    "name": e.name} for e in shown]
                         for c, shown in self.memories.items()},
            "markdown": self.markdown,
        }


def summary(analysis: Analysis) -> str:
    a = analysis
    novelty = "first of its type" if a.is_first_of_type else f"{a.similar_count} similar before"
    failure = a.task.last_failure_type or "a failure"
    retry = f", refinement after {failure}" if a.is_refinement else ""
    history = (
        f"{a.history} related task{'s' if a.history > 1 else ''} took {a.avg_turns:.1f} turns "
        f"on average; {a.success_rate:.0%} succeeded."
        if a.history else "No related task on record."
    )
    return (
        f"{a.task_type.value.capitalize()} task, complexity {a.task.complexity}, "
        f"phase {a.phase.value}; {novelty}{retry}. {history}"
    )


def system_blocks(
    category: Category, analysis: Analysis, knowledge: SystemKnowledge
) -> list[Block]:
    task = analysis.task
    if category is C.ROLE_CONSTRAINTS:
        return role_blocks(knowledge.role(task.current_actor))
    if category is C.QUALITY_GATES:
        return [gate_block(knowledge.gate(task.task_type, task.complexity))]
    if task.current_actor == "coach":
        return []  # 004 gives the mode's guidance to the player only: the coach does not build
    return mode_blocks(knowledge.suggest_mode(task.task_type, task.complexity))


async def build_context(
    store: MemoryBackend,
    task: Task,
    *,
    project_id: str,
    phase: Phase = Phase.IMPLEMENT,
    tokens: int | None = None,
    shares: Mapping[Category, float] | None = None,
    thresholds: Thresholds | None = None,
    overrides: Overrides | None = None,
    at: datetime | None = None,
    extra_groups: Sequence[str] = (),
    expanders: Sequence[Expander] = DEFAULT_EXPANDERS,
    guess_areas: AreaGuess | None = None,
) -> ContextResult:
    """The job-specific context of ``task`` in ``phase``. ``tokens`` replaces the computed
    total, ``shares`` the computed split (any positive weights; normalised); ``overrides`` are
    the project's overrides of system knowledge; ``at`` is "now" for validity checks;
    ``extra_groups`` are searched besides the project's own; ``expanders`` say what the project
    links to the task's subject (``memory.context.expansion``); ``guess_areas`` names the
    areas the task touches (``memory.context.areas``)."""
    limits = thresholds or Thresholds()
    own = project_groups(project_id)
    groups = [*own, *(group for group in extra_groups if group not in own)]
    if guess_areas is not None:
        task = await with_areas(store, task, groups, guess_areas)
    analysis = await analyze(
        AgentMemory(store, project_id), task, phase,
        similar_threshold=limits.similar_task, relevance_threshold=limits.familiar,
    )
    budget = plan_budget(analysis)
    if tokens is not None:
        budget = replace(budget, total=max(tokens, 0))
    if shares is not None:
        budget = Budget(budget.total, normalize(shares))
    text = summary(analysis)
    reserved = estimate_tokens(header(task.id, budget.total, budget.total, text))
    allocations = budget.allocate(max(budget.total - reserved, 0))

    wants_knowledge = any(allocations.get(c, 0) > 0 for c in SYSTEM_CATEGORIES)
    found, knowledge = await asyncio.gather(
        search_categories(store, analysis, groups, allocations, expanders),
        system_knowledge(store, overrides) if wants_knowledge else _none(),
    )
    episodes = select(isolated(found, task), allocations, limits, at or now())
    candidates = _candidates(analysis, episodes, knowledge, allocations)
    body, stats, shown = _render(task, budget, allocations, candidates)
    if not body:
        return ContextResult("", 0, budget.total, analysis, stats)
    return _finish(task.id, budget.total, text, body, analysis, stats, shown)


def _candidates(
    analysis: Analysis,
    episodes: Mapping[Category, list[Episode]],
    knowledge: SystemKnowledge | None,
    allocations: Mapping[Category, int],
) -> dict[Category, list[Block]]:
    """Each category's blocks, in the order they are kept when the room runs out."""
    candidates = {
        c: [_block(c, e, i) for i, e in enumerate(found)] for c, found in episodes.items()
    }
    if allocations.get(C.TURN_STATES, 0) > 0:
        # Newest turns are kept first; they are shown oldest first.
        turns = list(enumerate(analysis.turns))
        candidates[C.TURN_STATES] = [turn_block(t, i) for i, t in reversed(turns)]
    for category in SYSTEM_CATEGORIES:
        if knowledge is not None and allocations.get(category, 0) > 0:
            candidates[category] = system_blocks(category, analysis, knowledge)
    return candidates


def _block(category: Category, episode: Episode, order: int) -> Block:
    record = parse(episode, TaskOutcome) if category is C.SIMILAR_OUTCOMES else None
    block = outcome_block(record, order) if record is not None else episode_block(episode, order)
    return replace(block, shows=episode)


def _render(
    task: Task,
    budget: Budget,
    allocations: Mapping[Category, int],
    candidates: Mapping[Category, list[Block]],
) -> tuple[str, dict[Category, CategoryStats], dict[Category, tuple[Episode, ...]]]:
    """The sections, each trimmed to its allocation, in the design's order; their stats; and
    the memories they show.

    What the categories leave unused goes to those that have more to show, largest share
    first, until the context holds ``FULL_PCT`` of the allocated tokens: a relevant memory is
    not left out while the budget sits empty, and no category takes room before every one had
    its own share."""
    present = [c for c in Category if c in budget.shares]
    heads = {c: section_head(c, _subject(task, c)) for c in present}
    fitted = {c: fit(heads[c], candidates.get(c, []), allocations[c]) for c in present}
    total = sum(allocations[c] for c in present)
    borrowed = dict.fromkeys(present, 0)
    for category in sorted(present, key=lambda c: -budget.shares[c]):
        used = sum(tokens for _, tokens in fitted.values())
        if used * 100 >= total * FULL_PCT:
            break
        if len(fitted[category][0]) < len(candidates.get(category, [])):
            own = fitted[category][1]
            fitted[category] = fit(heads[category], candidates[category], own + total - used)
            borrowed[category] = max(fitted[category][1] - allocations[category], 0)
    sections: list[str] = []
    stats: dict[Category, CategoryStats] = {}
    shown: dict[Category, tuple[Episode, ...]] = {}
    for category in present:
        kept, used = fitted[category]
        if kept:
            sections.append(section(category, kept, _subject(task, category)))
        if memories := tuple(block.shows for block in kept if block.shows is not None):
            shown[category] = memories
        stats[category] = CategoryStats(
            float(budget.shares[category]), allocations[category], used,
            len(candidates.get(category, [])), len(kept), borrowed[category],
        )
    return "".join(sections), stats, shown


def _subject(task: Task, category: Category) -> str:
    return task.current_actor if category is C.ROLE_CONSTRAINTS else ""


async def _none() -> None:
    return None


def _finish(
    task_id: str,
    total: int,
    text: str,
    body: str,
    analysis: Analysis,
    stats: dict[Category, CategoryStats],
    shown: dict[Category, tuple[Episode, ...]],
) -> ContextResult:
    """Write the header's "used" figure as the estimate of the whole context including that
    figure: start from the reserved maximum and shrink to the fixed point (a smaller number
    never has more digits, so each step can only lower the estimate). The header ends in a
    blank line, so its size adds exactly to the body's, which is measured once."""
    body_size = measure(body)
    used = total
    while True:
        head = header(task_id, used, total, text)
        actual = (measure(head) + body_size).tokens
        if actual >= used:
            return ContextResult(head + body, used, total, analysis, stats, shown)
        used = actual
