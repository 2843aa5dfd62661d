"""The kinds of memory dualmem writes, each name spelled here once: the agent API, the session
splitter, seeding, the file layer's views and the CLI's help read them from this list. A kind is
an open set (``Episode.kind`` takes any valid name); these are the ones the product knows."""

from __future__ import annotations

# Written by the agent-facing API and the session splitter.
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
CAPTURED_KNOWLEDGE = "captured_knowledge"  # a person's answer to a knowledge-gap question

# System knowledge, written by seeding (``seeds``).
ROLE_CONSTRAINTS = "role_constraints"
QUALITY_GATE_CONFIG = "quality_gate_config"
IMPLEMENTATION_MODE = "implementation_mode"
PROJECT_OVERVIEW = "project_overview"
SEED_VERSION = "seed_version"  # bookkeeping of seeding itself, not knowledge

AGENT_KINDS = (
    GOTCHA, PATTERN, CODEBASE_DISCOVERY, TASK_OUTCOME, SESSION_INSIGHT, ADR, FAILED_APPROACH,
    RECOMMENDATION, QA_RESULT, FEATURE_SPEC, FEATURE_OVERVIEW, ARCHITECTURE, DOMAIN_KNOWLEDGE,
    TURN_STATE, CAPTURED_KNOWLEDGE,
)
"""what an agent's memories are, most asked for first (the CLI's help names them in this order)"""
SYSTEM_KINDS = (ROLE_CONSTRAINTS, QUALITY_GATE_CONFIG, IMPLEMENTATION_MODE, PROJECT_OVERVIEW,
                SEED_VERSION)
KINDS = AGENT_KINDS + SYSTEM_KINDS
"""every kind the product writes"""
