"""Where seeded knowledge lives. ``memory.agent.scopes`` re-exports these (imports point down), so a
group name is spelled in one place; the kinds are spelled with every other kind, in
``backends.kinds``."""

from __future__ import annotations

# re-exported, for seeds' own modules
from backends.kinds import IMPLEMENTATION_MODE as IMPLEMENTATION_MODE
from backends.kinds import PROJECT_OVERVIEW as PROJECT_OVERVIEW
from backends.kinds import QUALITY_GATE_CONFIG as QUALITY_GATE_CONFIG
from backends.kinds import ROLE_CONSTRAINTS as ROLE_CONSTRAINTS
from backends.kinds import SEED_VERSION as SEED_VERSION

# System groups: shared by every project, never prefixed with one.
ROLE_CONSTRAINTS_GROUP = "role_constraints"
QUALITY_GATE_GROUP = "quality_gate_configs"
IMPLEMENTATION_MODE_GROUP = "implementation_modes"
SYSTEM_GROUPS = (ROLE_CONSTRAINTS_GROUP, QUALITY_GATE_GROUP, IMPLEMENTATION_MODE_GROUP)
# Bookkeeping of seeding itself (which defaults a store holds); not knowledge, so not above.
SEED_GROUP = "system_seeds"

SEED_SOURCE = "system_seeding"
PROJECT_SEED_SOURCE = "project_seeding"
