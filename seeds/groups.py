"""Where seeded knowledge lives. ``memory.agent.scopes`` re-exports these (imports point down), so a
group or kind name is spelled in one place."""

from __future__ import annotations

# System groups: shared by every project, never prefixed with one.
ROLE_CONSTRAINTS_GROUP = "role_constraints"
QUALITY_GATE_GROUP = "quality_gate_configs"
IMPLEMENTATION_MODE_GROUP = "implementation_modes"
SYSTEM_GROUPS = (ROLE_CONSTRAINTS_GROUP, QUALITY_GATE_GROUP, IMPLEMENTATION_MODE_GROUP)
# Bookkeeping of seeding itself (which defaults a store holds); not knowledge, so not above.
SEED_GROUP = "system_seeds"

ROLE_CONSTRAINTS = "role_constraints"
QUALITY_GATE_CONFIG = "quality_gate_config"
IMPLEMENTATION_MODE = "implementation_mode"
SEED_VERSION = "seed_version"
PROJECT_OVERVIEW = "project_overview"

SEED_SOURCE = "system_seeding"
PROJECT_SEED_SOURCE = "project_seeding"
