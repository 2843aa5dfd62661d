"""dualmem: a memory for coding agents that survives between sessions and never stops working.

    from memory import open_memory, Episode

Every public name is imported on first use (PEP 562): ``import memory`` and the command line's
start-up load nothing they do not use (numpy, graphiti, kuzu, yaml, the MCP SDK).
"""

import backends.lean_typing as _typing
from backends.lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from backends import (
        BackendUnavailable,
        DualmemError,
        Episode,
        FileRefused,
        Hit,
        InvalidEpisode,
        MemoryBackend,
        MigrationError,
        Receipt,
        StoreCorrupt,
        WriteFailed,
        stable_id,
    )
    from memory.agent.decisions import (
        Adr,
        DecisionError,
        FailedApproach,
        capture_failed_approach,
        deprecate_adr,
        get_adr,
        list_adrs,
        load_critical_adrs,
        load_failed_approaches,
        next_adr_id,
        record_adr,
        record_decision,
        record_failed_approach,
        search_adrs,
        supersede_adr,
    )
    from memory.agent.features import (
        FeatureOverview,
        load_feature_overview,
        record_feature_overview,
    )
    from memory.agent.knowledge import (
        gate_thresholds,
        load_role_context,
        project_overrides,
        resolve_role_constraints,
        suggest_implementation_mode,
        system_knowledge,
    )
    from memory.agent.markdown import export_markdown
    from memory.agent.memories import AgentMemory, SimilarOutcome, search
    from memory.agent.outcomes import TaskOutcome
    from memory.agent.turns import (
        TurnState,
        capture_turn_state,
        create_turn_state_from_autobuild,
        feature_turns,
        latest_turn,
        previous_turn,
        record_turn,
        retention_status,
    )
    from memory.context import (
        CachedStore,
        ContextFormatterConfig,
        ContextResult,
        CriticalContext,
        Phase,
        Task,
        build_coach_prompt,
        build_context,
        format_context_for_injection,
        load_critical_context,
    )
    from memory.store.config import Config, ConfigError
    from memory.store.project import project_id
    from memory.store.selection import Selection, open_memory
    from memory.store.sync import SyncMemory
    from seeds import (
        ImplementationMode,
        KnowledgeError,
        ModeSuggestion,
        QualityGateProfile,
        RoleConstraints,
        seed_system_knowledge,
    )

__all__ = [
    "Adr",
    "AgentMemory",
    "BackendUnavailable",
    "CachedStore",
    "Config",
    "ConfigError",
    "ContextFormatterConfig",
    "ContextResult",
    "CriticalContext",
    "DecisionError",
    "DualmemError",
    "Episode",
    "FailedApproach",
    "FeatureOverview",
    "FileRefused",
    "Hit",
    "ImplementationMode",
    "InvalidEpisode",
    "KnowledgeError",
    "MemoryBackend",
    "MigrationError",
    "ModeSuggestion",
    "Phase",
    "QualityGateProfile",
    "Receipt",
    "RoleConstraints",
    "Selection",
    "SimilarOutcome",
    "StoreCorrupt",
    "SyncMemory",
    "Task",
    "TaskOutcome",
    "TurnState",
    "WriteFailed",
    "build_coach_prompt",
    "build_context",
    "capture_failed_approach",
    "capture_turn_state",
    "create_turn_state_from_autobuild",
    "deprecate_adr",
    "export_markdown",
    "feature_turns",
    "format_context_for_injection",
    "gate_thresholds",
    "get_adr",
    "latest_turn",
    "list_adrs",
    "load_critical_adrs",
    "load_critical_context",
    "load_failed_approaches",
    "load_feature_overview",
    "load_role_context",
    "next_adr_id",
    "open_memory",
    "previous_turn",
    "project_id",
    "project_overrides",
    "record_adr",
    "record_decision",
    "record_failed_approach",
    "record_feature_overview",
    "record_turn",
    "resolve_role_constraints",
    "retention_status",
    "search",
    "search_adrs",
    "seed_system_knowledge",
    "stable_id",
    "suggest_implementation_mode",
    "supersede_adr",
    "system_knowledge",
]

_SOURCES: dict[str, tuple[str, ...]] = {
    "backends": (
        "BackendUnavailable", "DualmemError", "Episode", "FileRefused", "Hit", "InvalidEpisode",
        "MemoryBackend", "MigrationError", "Receipt", "StoreCorrupt", "WriteFailed", "stable_id",
    ),
    "memory.agent.memories": ("AgentMemory", "SimilarOutcome", "search"),
    "memory.agent.features": (
        "FeatureOverview", "load_feature_overview", "record_feature_overview",
    ),
    "memory.agent.outcomes": ("TaskOutcome",),
    "memory.store.config": ("Config", "ConfigError"),
    "memory.context": (
        "CachedStore", "ContextFormatterConfig", "ContextResult", "CriticalContext", "Phase",
        "Task", "build_coach_prompt", "build_context", "format_context_for_injection",
        "load_critical_context",
    ),
    "memory.agent.decisions": (
        "Adr", "DecisionError", "FailedApproach", "capture_failed_approach", "deprecate_adr",
        "get_adr", "list_adrs", "load_critical_adrs", "load_failed_approaches", "next_adr_id",
        "record_adr", "record_decision", "record_failed_approach",
        "search_adrs", "supersede_adr",
    ),
    "memory.agent.knowledge": (
        "gate_thresholds", "load_role_context", "project_overrides", "resolve_role_constraints",
        "suggest_implementation_mode", "system_knowledge",
    ),
    "memory.agent.markdown": ("export_markdown",),
    "memory.store.project": ("project_id",),
    "memory.store.selection": ("Selection", "open_memory"),
    "memory.store.sync": ("SyncMemory",),
    "memory.agent.turns": (
        "TurnState", "capture_turn_state", "create_turn_state_from_autobuild", "feature_turns",
        "latest_turn", "previous_turn", "record_turn",
        "retention_status",
    ),
    "seeds": (
        "ImplementationMode", "KnowledgeError", "ModeSuggestion", "QualityGateProfile",
        "RoleConstraints", "seed_system_knowledge",
    ),
}

if not _typing.TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, _SOURCES)
