"""Critical context (GuardKit's ``load_critical_context``): what a session must know before it
starts, whatever the budget. One call returns the project's system context (its overview and
architecture), the role's constraints, the quality gates for the task, the decisions in force,
the failure patterns and failed approaches relevant to the task, the patterns that worked and
similar tasks' outcomes, and, for feature work, the feature's overview (for ``feature-build``,
the autobuild mode's guidance too); as data (``to_json``) and as Markdown
(``format_context_for_injection``, whose ``ContextFormatterConfig`` picks the sections).

Unlike ``build_context`` it is not budgeted or thresholded: decisions in force and gates are
rules, not suggestions, so they are always given (decisions up to ``decisions``, most relevant
first when a task is described).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from backends.model import Episode
from backends.protocol import MemoryBackend
from memory.agent.decisions import (
    Adr,
    FailedApproach,
    list_adrs,
    list_failed_approaches,
    load_failed_approaches,
    search_adrs,
)
from memory.agent.features import find_feature_memory
from memory.agent.knowledge import system_knowledge
from memory.agent.outcomes import TaskOutcome
from memory.agent.records import parse, title
from memory.agent.scopes import (
    ARCHITECTURE,
    GOTCHA,
    PATTERN,
    PROJECT_OVERVIEW,
    TASK_OUTCOME,
    project_group,
)
from memory.context.format import MAX_DETAIL_CHARS, detail, gate_block, one_line, role_blocks
from seeds import ImplementationMode, Overrides, QualityGateProfile, RoleConstraints

DEFAULT_DECISIONS = 10  # the design loads ten architecture decisions
DEFAULT_FAILURES = 5  # and five failure patterns


FEATURE_BUILD = "feature-build"


@dataclass(frozen=True)
class ContextFormatterConfig:
    """Which sections ``format_context_for_injection`` writes (000's five switches and its
    item limit, plus ours for the parts 000 does not name)."""

    include_system_context: bool = True
    include_quality_gates: bool = True
    include_adrs: bool = True
    include_failures: bool = True
    max_items_per_section: int = 10
    include_role: bool = True
    include_patterns: bool = True
    include_outcomes: bool = True
    include_feature: bool = True


@dataclass(frozen=True)
class CriticalContext:
    role: RoleConstraints
    quality_gates: QualityGateProfile
    decisions: list[Adr]
    """ADRs in force"""
    failed_approaches: list[FailedApproach]
    failure_patterns: list[Episode]
    """gotchas: traps met before"""
    feature_overview: Episode | None
    """the feature's spec or overview, for feature work"""
    system_context: tuple[Episode, ...] = ()
    """the project's overview and architecture"""
    successful_patterns: tuple[Episode, ...] = ()
    """patterns: how work is done here"""
    similar_task_outcomes: tuple[TaskOutcome, ...] = ()
    feature_build: ImplementationMode | None = None
    """for ``command="feature-build"``: the autobuild mode's guidance"""

    # 000's other names for the same parts.
    @property
    def architecture_decisions(self) -> list[Adr]:
        return self.decisions

    @property
    def relevant_adrs(self) -> list[Adr]:
        return self.decisions

    @property
    def applicable_patterns(self) -> tuple[Episode, ...]:
        return self.successful_patterns

    @property
    def relevant_rules(self) -> tuple[Episode, ...]:
        """The project's rules of how code is written are its patterns."""
        return self.successful_patterns

    def to_json(self) -> dict[str, Any]:
        overview = self.feature_overview
        mode = self.feature_build
        return {
            "system_context": [_memory(episode) for episode in self.system_context],
            "role_constraints": self.role.model_dump(mode="json"),
            "quality_gates": self.quality_gates.model_dump(mode="json"),
            "decisions": [adr.model_dump(mode="json") for adr in self.decisions],
            "failed_approaches": [f.model_dump(mode="json") for f in self.failed_approaches],
            "failure_patterns": [_memory(episode) for episode in self.failure_patterns],
            "successful_patterns": [_memory(episode) for episode in self.successful_patterns],
            "similar_task_outcomes": [o.model_dump(mode="json")
                                      for o in self.similar_task_outcomes],
            "feature_overview": None if overview is None else _memory(overview),
            "feature_build": None if mode is None else mode.model_dump(mode="json"),
            "markdown": self.markdown(),
        }

    def markdown(self, config: ContextFormatterConfig | None = None) -> str:
        c = config or ContextFormatterConfig()
        most = max(c.max_items_per_section, 0)
        parts = ["## Critical context\n"]
        if c.include_system_context and self.system_context:
            parts.append("### System context\n\n" + "".join(
                f"- **{one_line(e.name)}**: {title(e.body, MAX_DETAIL_CHARS)}\n"
                for e in self.system_context[:most]))
        if c.include_role:
            parts.append(f"### Your role: {self.role.role}\n\n"
                         + "".join(block.text for block in role_blocks(self.role)))
        if c.include_quality_gates:
            parts.append("### Quality gates for this task\n\n"
                         + gate_block(self.quality_gates).text
                         + "\nDo not adjust these thresholds during this session.\n")
        if c.include_adrs and self.decisions:
            parts.append("### Architecture decisions (MUST FOLLOW)\n\n" + "".join(
                f"- **{adr.adr_id}: {one_line(adr.title)}**: {one_line(adr.decision)}\n"
                for adr in self.decisions[:most]
            ))
        warnings = [_failed(f) for f in self.failed_approaches]
        warnings += [f"- {said(episode, strong=True)}\n" for episode in self.failure_patterns]
        if c.include_failures and warnings:
            parts.append("### Known failures (DO NOT REPEAT)\n\n" + "".join(warnings[:most]))
        if c.include_patterns and self.successful_patterns:
            parts.append("### What worked here\n\n" + "".join(
                f"- {said(e)}\n" for e in self.successful_patterns[:most]))
        if c.include_outcomes and self.similar_task_outcomes:
            parts.append("### Similar tasks\n\n" + "".join(
                f"- {_outcome(o)}\n" for o in self.similar_task_outcomes[:most]))
        if c.include_feature and self.feature_overview is not None:
            overview = self.feature_overview
            parts.append(f"### Feature overview: {one_line(overview.name)}\n\n"
                         f"{detail(overview)}\n")
        if c.include_feature and self.feature_build is not None:
            mode = self.feature_build
            parts.append("### Feature build\n\n" + "".join(
                f"- {one_line(line)}\n" for line in (*mode.when_to_use, *mode.pitfalls)))
        return "\n".join(parts)


def format_context_for_injection(
    context: CriticalContext, config: ContextFormatterConfig | None = None
) -> str:
    """000's ``format_context_for_injection``: the critical context as Markdown to put in a
    session's prompt."""
    return context.markdown(config)


def _outcome(record: TaskOutcome) -> str:
    verdict = "succeeded" if record.success else "failed"
    text = f"**{record.task_id}** {verdict}: {one_line(record.outcome or record.description)}"
    if record.lessons_learned:
        text += f". Lessons: {'; '.join(one_line(x) for x in record.lessons_learned)}"
    return text


def _memory(episode: Episode) -> dict[str, Any]:
    return {"id": episode.id, "kind": episode.kind, "name": episode.name, "text": said(episode)}


def said(episode: Episode, *, strong: bool = False) -> str:
    """What a memory says, on one line. A structured body's main text is its name (the
    gotcha of ``{"gotcha": ..., "context": ...}``), which its fields leave out: it leads
    (in bold when ``strong``)."""
    fields = detail(episode)
    if not isinstance(episode.data, dict):
        return fields or one_line(episode.name)
    lead = f"**{one_line(episode.name)}**" if strong else one_line(episode.name)
    return f"{lead}: {fields}" if fields else lead


def _failed(record: FailedApproach) -> str:
    lead = f"**{record.id}** " if record.id else ""
    text = f"{lead}{one_line(record.approach)} ({record.severity}): {one_line(record.symptom)}"
    if record.prevention:
        text += f". Prevent: {one_line(record.prevention)}"
    if record.related_adrs:
        text += f" (see {', '.join(record.related_adrs)})"
    return f"- {text}\n"


async def load_critical_context(
    store: MemoryBackend,
    project_id: str,
    *,
    task: str = "",
    task_id: str | None = None,
    command: str | None = None,
    task_type: str = "feature",
    complexity: int = 5,
    role: str = "player",
    feature_id: str | None = None,
    overrides: Overrides | None = None,
    decisions: int = DEFAULT_DECISIONS,
    failures: int = DEFAULT_FAILURES,
) -> CriticalContext:
    """What a session on ``task`` must know (see the module docstring). ``task_id`` joins the
    task's words (memories naming the task are found by it); ``command="feature-build"`` adds
    the autobuild mode's guidance. Without either, the most repeated failed approaches, the
    latest gotchas and patterns stand for the relevant ones."""
    query = " ".join(part for part in (task, task_id or "") if part.strip())
    (knowledge, adrs, failed, overview, outcomes), (patterns, system, worked) = \
        await asyncio.gather(
            asyncio.gather(
                system_knowledge(store, overrides),
                _decisions(store, project_id, query, decisions),
                _failed_approaches(store, project_id, query, failures),
                _feature_overview(store, project_id, feature_id),
                _similar_outcomes(store, project_id, query, failures),
            ),
            asyncio.gather(
                _kind(store, project_id, GOTCHA, query, failures),
                _kind(store, project_id, (PROJECT_OVERVIEW, ARCHITECTURE), "", failures),
                _kind(store, project_id, PATTERN, query, failures),
            ),
        )
    mode = None
    if command == FEATURE_BUILD:
        mode = next((m for m in knowledge.modes if m.name == "autobuild"), None)
    return CriticalContext(
        role=knowledge.role(role), quality_gates=knowledge.gate(task_type, complexity),
        decisions=adrs, failed_approaches=failed, failure_patterns=patterns,
        feature_overview=overview, system_context=tuple(system),
        successful_patterns=tuple(worked), similar_task_outcomes=outcomes, feature_build=mode,
    )


async def _decisions(store: MemoryBackend, project_id: str, task: str, limit: int) -> list[Adr]:
    if task.strip():
        relevant = await search_adrs(store, project_id, task, limit=limit)
        seen = {adr.adr_id for adr in relevant}
        rest = [adr for adr in await list_adrs(store, project_id, in_force_only=True)
                if adr.adr_id not in seen]
        return [*relevant, *rest][:limit]  # in force, whether the task's words match or not
    return (await list_adrs(store, project_id, in_force_only=True))[:limit]


async def _failed_approaches(
    store: MemoryBackend, project_id: str, task: str, limit: int
) -> list[FailedApproach]:
    if task.strip():
        return await load_failed_approaches(store, project_id, task, limit)
    return (await list_failed_approaches(store, project_id))[:limit]


async def _kind(
    store: MemoryBackend, project_id: str, kinds: str | tuple[str, ...], task: str, limit: int
) -> list[Episode]:
    """The memories of ``kinds`` relevant to ``task``; without a task, the latest."""
    group, wanted = project_group(project_id), [kinds] if isinstance(kinds, str) else list(kinds)
    if task.strip():
        hits = await store.search(task, group_ids=[group], kinds=wanted, limit=limit)
        return [hit.episode for hit in hits]
    latest = [episode async for episode in store.scan(group_ids=[group], kinds=wanted)]
    return sorted(latest, key=lambda e: e.created_at, reverse=True)[:limit]


async def _similar_outcomes(
    store: MemoryBackend, project_id: str, task: str, limit: int
) -> tuple[TaskOutcome, ...]:
    found = await _kind(store, project_id, TASK_OUTCOME, task, limit)
    return tuple(record for e in found if (record := parse(e, TaskOutcome)) is not None)


async def _feature_overview(
    store: MemoryBackend, project_id: str, feature_id: str | None
) -> Episode | None:
    return None if not feature_id else await find_feature_memory(store, project_id, feature_id)
