"""Where memories live: the kinds the agent API writes and the groups they are scoped to.

Project memories share the project's group (its stable id from ``<home>/project.json``), told
apart by kind; turn states get a project-scoped category group; system knowledge lives in
system groups that are never prefixed with a project.
"""

from __future__ import annotations

from backends.model import check_group_id

# System knowledge kinds and groups live below this floor, in seeds; re-exported here.
from seeds.groups import (
    IMPLEMENTATION_MODE,
    IMPLEMENTATION_MODE_GROUP,
    PROJECT_OVERVIEW,
    QUALITY_GATE_CONFIG,
    QUALITY_GATE_GROUP,
    ROLE_CONSTRAINTS,
    ROLE_CONSTRAINTS_GROUP,
    SYSTEM_GROUPS,
)

# Kinds written by the agent-facing API.
SESSION_INSIGHT = "session_insight"
PATTERN = "pattern"
GOTCHA = "gotcha"
CODEBASE_DISCOVERY = "codebase_discovery"
TASK_OUTCOME = "task_outcome"
QA_RESULT = "qa_result"
ADR = "adr"
FAILED_APPROACH = "failed_approach"
FEATURE_SPEC = "feature_spec"
FEATURE_OVERVIEW = "feature_overview"  # GuardKit's FeatureOverviewEntity
ARCHITECTURE = "architecture"
DOMAIN_KNOWLEDGE = "domain_knowledge"
TURN_STATE = "turn_state"
RECOMMENDATION = "recommendation"  # advice for the next session, split from session insights


def project_group(project_id: str, spec: str | None = None) -> str:
    """The group of a project's memories; ``spec`` narrows it to one spec when asked."""
    return check_group_id(f"{project_id}__spec_{spec}" if spec else project_id)


def turn_states_group(project_id: str) -> str:
    return check_group_id(f"{project_id}__turn_states")


__all__ = [
    "ADR",
    "ARCHITECTURE",
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
