"""Default system knowledge as data files (``seeds/data``), seeding it into a store, and
per-project overrides. Works through ``MemoryBackend`` only."""

import backends.lean_typing as _typing
from backends.lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from seeds.groups import (
        IMPLEMENTATION_MODE,
        IMPLEMENTATION_MODE_GROUP,
        PROJECT_OVERVIEW,
        QUALITY_GATE_CONFIG,
        QUALITY_GATE_GROUP,
        ROLE_CONSTRAINTS,
        ROLE_CONSTRAINTS_GROUP,
        SEED_GROUP,
        SEED_VERSION,
        SYSTEM_GROUPS,
    )
    from seeds.knowledge import (
        ImplementationMode,
        KnowledgeError,
        ModeSuggestion,
        QualityGateProfile,
        RoleConstraints,
        SystemKnowledge,
        builtin_knowledge,
        item_from_episode,
    )
    from seeds.overrides import (
        DESIGN_GATES,
        DESIGN_OVERRIDES,
        OVERRIDES_FILE,
        Overrides,
        load_gates_file,
        load_overrides,
    )
    from seeds.seeding import (
        SeedReport,
        put_if_changed,
        seed_project_overview,
        seed_system_knowledge,
        seeded_version,
    )

__all__ = [
    "DESIGN_GATES",
    "DESIGN_OVERRIDES",
    "IMPLEMENTATION_MODE",
    "IMPLEMENTATION_MODE_GROUP",
    "OVERRIDES_FILE",
    "PROJECT_OVERVIEW",
    "QUALITY_GATE_CONFIG",
    "QUALITY_GATE_GROUP",
    "ROLE_CONSTRAINTS",
    "ROLE_CONSTRAINTS_GROUP",
    "SEED_GROUP",
    "SEED_VERSION",
    "SYSTEM_GROUPS",
    "ImplementationMode",
    "KnowledgeError",
    "ModeSuggestion",
    "Overrides",
    "QualityGateProfile",
    "RoleConstraints",
    "SeedReport",
    "SystemKnowledge",
    "builtin_knowledge",
    "item_from_episode",
    "load_gates_file",
    "load_overrides",
    "put_if_changed",
    "seed_project_overview",
    "seed_system_knowledge",
    "seeded_version",
]

_SOURCES: dict[str, tuple[str, ...]] = {
    "seeds.groups": (
        "IMPLEMENTATION_MODE", "IMPLEMENTATION_MODE_GROUP", "PROJECT_OVERVIEW",
        "QUALITY_GATE_CONFIG", "QUALITY_GATE_GROUP", "ROLE_CONSTRAINTS", "ROLE_CONSTRAINTS_GROUP",
        "SEED_GROUP", "SEED_VERSION", "SYSTEM_GROUPS",
    ),
    "seeds.knowledge": (
        "ImplementationMode", "KnowledgeError", "ModeSuggestion", "QualityGateProfile",
        "RoleConstraints", "SystemKnowledge", "builtin_knowledge", "item_from_episode",
    ),
    "seeds.overrides": (
        "DESIGN_GATES", "DESIGN_OVERRIDES", "OVERRIDES_FILE", "Overrides", "load_gates_file",
        "load_overrides",
    ),
    "seeds.seeding": (
        "SeedReport", "put_if_changed", "seed_project_overview", "seed_system_knowledge",
        "seeded_version",
    ),
}

if not _typing.TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, _SOURCES)
