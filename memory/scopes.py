"""Where memories live: the kinds the agent API writes and the groups they are scoped to.

Project memories share the project's group (its stable id from ``<home>/project.json``), told
apart by kind; turn states get a project-scoped category group; system knowledge lives in
system groups that are never prefixed with a project.
"""

from __future__ import annotations

from backends.model import check_group_id

# Kinds written by the agent-facing API.
SESSION_INSIGHT = "session_insight"
PATTERN = "pattern"
GOTCHA = "gotcha"
CODEBASE_DISCOVERY = "codebase_discovery"
TASK_OUTCOME = "task_outcome"
QA_RESULT = "qa_result"
ADR = "adr"
FAILED_APPROACH = "failed_approach"
PROJECT_OVERVIEW = "project_overview"
FEATURE_SPEC = "feature_spec"
ARCHITECTURE = "architecture"
DOMAIN_KNOWLEDGE = "domain_knowledge"
TURN_STATE = "turn_state"
ROLE_CONSTRAINTS = "role_constraints"
QUALITY_GATE_CONFIG = "quality_gate_config"
IMPLEMENTATION_MODE = "implementation_mode"

# System groups: shared by every project, seeded from seeds/.
ROLE_CONSTRAINTS_GROUP = "role_constraints"
QUALITY_GATE_GROUP = "quality_gate_configs"
IMPLEMENTATION_MODE_GROUP = "implementation_modes"
SYSTEM_GROUPS = (ROLE_CONSTRAINTS_GROUP, QUALITY_GATE_GROUP, IMPLEMENTATION_MODE_GROUP)


def project_group(project_id: str, spec: str | None = None) -> str:
    """The group of a project's memories; ``spec`` narrows it to one spec when asked."""
    return check_group_id(f"{project_id}__spec_{spec}" if spec else project_id)


def turn_states_group(project_id: str) -> str:
    return check_group_id(f"{project_id}__turn_states")
