"""Where memories live: the kinds the agent API writes and the groups they are scoped to.

Project memories share the project's group (its stable id from ``<home>/project.json``), told
apart by kind; turn states get a project-scoped category group; system knowledge lives in
system groups that are never prefixed with a project.
"""

from __future__ import annotations

# Kinds are spelled once, in the model; system groups in seeds. Re-exported here.
from backends.kinds import (
    ADR,
    ARCHITECTURE,
    CAPTURED_KNOWLEDGE,
    CODEBASE_DISCOVERY,
    DOMAIN_KNOWLEDGE,
    FAILED_APPROACH,
    FEATURE_OVERVIEW,
    FEATURE_SPEC,
    GOTCHA,
    IMPLEMENTATION_MODE,
    PATTERN,
    PROJECT_OVERVIEW,
    QA_RESULT,
    QUALITY_GATE_CONFIG,
    RECOMMENDATION,
    ROLE_CONSTRAINTS,
    SESSION_INSIGHT,
    TASK_OUTCOME,
    TURN_STATE,
)
from backends.model import check_group_id
from seeds.groups import (
    IMPLEMENTATION_MODE_GROUP,
    QUALITY_GATE_GROUP,
    ROLE_CONSTRAINTS_GROUP,
    SYSTEM_GROUPS,
)


def project_group(project_id: str, spec: str | None = None) -> str:
    """The group of a project's memories; ``spec`` narrows it to one spec when asked."""
    return check_group_id(f"{project_id}__spec_{spec}" if spec else project_id)


def turn_states_group(project_id: str) -> str:
    return check_group_id(f"{project_id}__turn_states")


__all__ = [
    "ADR",
    "ARCHITECTURE",
    "CAPTURED_KNOWLEDGE",
    "CODEBASE_DISCOVERY",
    "DOMAIN_KNOWLEDGE",
    "FAILED_APPROACH",
    "FEATURE_OVERVIEW",
    "FEATURE_SPEC",
    "GOTCHA",
    "IMPLEMENTATION_MODE",
    "IMPLEMENTATION_MODE_GROUP",
    "PATTERN",
    "PROJECT_OVERVIEW",
    "QA_RESULT",
    "QUALITY_GATE_CONFIG",
    "QUALITY_GATE_GROUP",
    "RECOMMENDATION",
    "ROLE_CONSTRAINTS",
    "ROLE_CONSTRAINTS_GROUP",
    "SESSION_INSIGHT",
    "SYSTEM_GROUPS",
    "TASK_OUTCOME",
    "TURN_STATE",
    "project_group",
    "turn_states_group",
]
