"""Critical context (GuardKit's ``load_critical_context``): what a session must know before it
starts, whatever the budget. One call returns the role's constraints, the quality gates for the
task, the decisions in force, the failure patterns and failed approaches relevant to the task,
and, for feature work, the feature's overview; as data (``to_json``) and as Markdown.

Unlike ``build_context`` it is not budgeted or thresholded: decisions in force and gates are
rules, not suggestions, so they are always given (decisions up to ``decisions``, most relevant
first when a task is described).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from backends.model import Episode, stable_id
from backends.protocol import MemoryBackend
from memory.agent.decisions import (
    Adr,
    FailedApproach,
    list_adrs,
    list_failed_approaches,
    load_failed_approaches,
    search_adrs,
)
from memory.agent.knowledge import system_knowledge
from memory.agent.scopes import FEATURE_OVERVIEW, FEATURE_SPEC, GOTCHA, project_group
from memory.context.format import detail, gate_block, one_line, role_blocks
from seeds import Overrides, QualityGateProfile, RoleConstraints

DEFAULT_DECISIONS = 10  # the design loads ten architecture decisions
DEFAULT_FAILURES = 5  # and five failure patterns


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

    def to_json(self) -> dict[str, Any]:
        overview = self.feature_overview
        return {
            "role_constraints": self.role.model_dump(mode="json"),
            "quality_gates": self.quality_gates.model_dump(mode="json"),
            "decisions": [adr.model_dump(mode="json") for adr in self.decisions],
            "failed_approaches": [f.model_dump(mode="json") for f in self.failed_approaches],
            "failure_patterns": [_memory(episode) for episode in self.failure_patterns],
            "feature_overview": None if overview is None else _memory(overview),
            "markdown": self.markdown(),
        }

    def markdown(self) -> str:
        parts = [
            f"## Critical context\n\n### Your role: {self.role.role}\n\n"
            + "".join(block.text for block in role_blocks(self.role)),
            "### Quality gates for this task\n\n" + gate_block(self.quality_gates).text
            + "\nDo not adjust these thresholds during this session.\n",
        ]
        if self.decisions:
            parts.append("### Architecture decisions (MUST FOLLOW)\n\n" + "".join(
                f"- **{adr.adr_id}: {one_line(adr.title)}**: {one_line(adr.decision)}\n"
                for adr in self.decisions
            ))
        warnings = [_failed(f) for f in self.failed_approaches]
        warnings += [f"- {said(episode, strong=True)}\n" for episode in self.failure_patterns]
        if warnings:
            parts.append("### Known failures (AVOID THESE)\n\n" + "".join(warnings))
        if self.feature_overview is not None:
            overview = self.feature_overview
            parts.append(f"### Feature overview: {one_line(overview.name)}\n\n"
                         f"{detail(overview)}\n")
        return "\n".join(parts)


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
    task_type: str = "feature",
    complexity: int = 5,
    role: str = "player",
    feature_id: str | None = None,
    overrides: Overrides | None = None,
    decisions: int = DEFAULT_DECISIONS,
    failures: int = DEFAULT_FAILURES,
) -> CriticalContext:
    """What a session on ``task`` must know (see the module docstring). Without a task, the
    most repeated failed approaches and the latest gotchas stand for the relevant ones."""
    knowledge, adrs, failed, patterns, overview = await asyncio.gather(
        system_knowledge(store, overrides),
        _decisions(store, project_id, task, decisions),
        _failed_approaches(store, project_id, task, failures),
        _failure_patterns(store, project_id, task, failures),
        _feature_overview(store, project_id, feature_id),
    )
    return CriticalContext(
        role=knowledge.role(role), quality_gates=knowledge.gate(task_type, complexity),
        decisions=adrs, failed_approaches=failed, failure_patterns=patterns,
        feature_overview=overview,
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


async def _failure_patterns(
    store: MemoryBackend, project_id: str, task: str, limit: int
) -> list[Episode]:
    group = project_group(project_id)
    if task.strip():
        hits = await store.search(task, group_ids=[group], kinds=[GOTCHA], limit=limit)
        return [hit.episode for hit in hits]
    latest = [episode async for episode in store.scan(group_ids=[group], kinds=[GOTCHA])]
    return sorted(latest, key=lambda e: e.created_at, reverse=True)[:limit]


async def _feature_overview(
    store: MemoryBackend, project_id: str, feature_id: str | None
) -> Episode | None:
    """The feature's spec (``feature_spec``) or overview (``feature_overview``) stored under
    its id; else the best match of either that names it."""
    if not feature_id:
        return None
    group = project_group(project_id)
    for kind in (FEATURE_SPEC, FEATURE_OVERVIEW):
        found = await store.get(stable_id(group, kind, feature_id))
        if found is not None:
            return found
    hits = await store.search(feature_id, group_ids=[group], kinds=[FEATURE_SPEC,
                                                                      FEATURE_OVERVIEW], limit=5)
    named = [hit.episode for hit in hits
             if feature_id.casefold() in f"{hit.episode.name} {hit.episode.body}".casefold()]
    return named[0] if named else None
