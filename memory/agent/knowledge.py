"""Resolution of system knowledge: project overrides > stored knowledge > built-in defaults.

Every function answers without a store (from the built-in defaults, which are what seeding
writes), so an agent gets its role constraints and gate thresholds even when no memory layer
can be opened. A store that cannot be read is treated the same way: these are hard fallbacks.
"""

from __future__ import annotations

import logging
from pathlib import Path

from backends.errors import DualmemError
from backends.protocol import MemoryBackend
from seeds import (
    DESIGN_GATES,
    DESIGN_OVERRIDES,
    OVERRIDES_FILE,
    SYSTEM_GROUPS,
    ModeSuggestion,
    Overrides,
    QualityGateProfile,
    RoleConstraints,
    SystemKnowledge,
    builtin_knowledge,
    item_from_episode,
    load_gates_file,
    load_overrides,
)

log = logging.getLogger(__name__)


def project_overrides(home: Path) -> Overrides:
    """The project's overrides: FEAT-GE-001's ``.guardkit/config/quality-gates.yaml`` and
    ``.guardkit/config/entity-overrides.yaml`` in the folder that holds ``home`` (the
    project's, for ``./.dualmem``), then ours,
    ``<home>/entity-overrides.yaml``, which wins where both set a threshold. Either or both
    may be missing. ``FileRefused`` when ours is a symbolic link: the home's own file, never
    read through a link that could lead anywhere (and show what it holds in an error)."""
    gates = load_gates_file(home.parent / DESIGN_GATES)  # authoritative, FEAT-GE-001 says
    design = load_overrides(home.parent / DESIGN_OVERRIDES, missing_ok=True)
    return gates | design | load_overrides(home / OVERRIDES_FILE, missing_ok=True, follow=False)


async def system_knowledge(
    store: MemoryBackend | None = None, overrides: Overrides | None = None
) -> SystemKnowledge:
    """All system knowledge in force: the stored items (read exactly, by scanning the few
    episodes of the system groups) over the built-in defaults, with ``overrides`` on top."""
    knowledge = builtin_knowledge()
    if store is not None:
        try:
            stored = [item_from_episode(ep) async for ep in store.scan(group_ids=SYSTEM_GROUPS)]
        except DualmemError as exc:
            log.warning("system knowledge from the built-in defaults: %s", exc)
        else:
            knowledge = knowledge.merged([item for item in stored if item is not None])
    return overrides.apply(knowledge) if overrides is not None else knowledge


async def resolve_role_constraints(
    role: str, store: MemoryBackend | None = None, overrides: Overrides | None = None
) -> RoleConstraints:
    """The constraints of ``role`` (``player``, ``coach``); ``KnowledgeError`` for a role
    nobody defined."""
    return (await system_knowledge(store, overrides)).role(role)


async def gate_thresholds(
    task_type: str,
    complexity: int,
    store: MemoryBackend | None = None,
    overrides: Overrides | None = None,
) -> QualityGateProfile:
    """The quality-gate profile whose complexity range (1-10) contains ``complexity``, for the
    task type (aliases such as ``implementation`` → ``feature``; unknown types as ``feature``)."""
    return (await system_knowledge(store, overrides)).gate(task_type, complexity)


async def suggest_implementation_mode(
    task_type: str,
    complexity: int,
    store: MemoryBackend | None = None,
    overrides: Overrides | None = None,
) -> ModeSuggestion:
    """Advice on the mode (``direct``, ``task_work``, ``autobuild``). Ranges overlap; the rule
    (``SystemKnowledge.suggest_mode``): the containing range whose centre is nearest, ties to
    less ceremony. So 1-3 → direct, 4-6 → task_work, 7-10 → autobuild (documentation tasks are
    never autobuild)."""
    return (await system_knowledge(store, overrides)).suggest_mode(task_type, complexity)


async def load_role_context(
    role: str,
    context: str = "feature-build",
    store: MemoryBackend | None = None,
    overrides: Overrides | None = None,
) -> str:
    """000's ``load_role_context``: the role's constraints as Markdown (``# PLAYER Role
    Constraints``, its primary responsibility, then MUST DO, MUST NOT DO, ASK BEFORE, ESCALATE
    WHEN). ``context`` is the command it is for, named in the heading. Answers without a store
    (the built-in defaults); ``KnowledgeError`` for a role nobody defined, where 000 returns
    None (docs/CONFORMANCE.md)."""
    constraints = await resolve_role_constraints(role, store, overrides)
    lines = [f"# {constraints.role.upper()} Role Constraints ({context})", ""]
    if constraints.description:
        lines += [f"**Primary responsibility**: {constraints.description}", ""]
    for heading, items in (("MUST DO", constraints.must_do),
                           ("MUST NOT DO", constraints.must_not_do),
                           ("ASK BEFORE", constraints.ask_before),
                           ("ESCALATE WHEN", constraints.escalate_when)):
        if items:
            lines += [f"## {heading}", *(f"- {item}" for item in items), ""]
    return "\n".join(lines)
