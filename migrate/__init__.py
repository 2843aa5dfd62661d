"""Replays one memory layer into another through the protocol alone: a ledger for resuming,
verification per group, and the import of Auto-Claude memory (every spec of a project)."""

import typing

from backends.lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from migrate.auto_claude import AutoClaudeFolder, SkippedFile
    from migrate.auto_claude_import import AUTO_CLAUDE, ImportReport, SpecImport, import_specs
    from migrate.auto_claude_specs import SpecFolder, find_specs
    from migrate.insights import Scope
    from migrate.ledger import Ledger
    from migrate.migrator import (
        FILES_TO_GRAPH,
        MigrationReport,
        Migrator,
        Plan,
        Progress,
        Skipped,
        dry_run,
        make_plan,
        prune,
    )
    from migrate.verify import GroupCheck, Verification, verify

__all__ = [
    "AUTO_CLAUDE",
    "FILES_TO_GRAPH",
    "AutoClaudeFolder",
    "GroupCheck",
    "ImportReport",
    "Ledger",
    "MigrationReport",
    "Migrator",
    "Plan",
    "Progress",
    "Scope",
    "Skipped",
    "SkippedFile",
    "SpecFolder",
    "SpecImport",
    "Verification",
    "dry_run",
    "find_specs",
    "import_specs",
    "make_plan",
    "prune",
    "verify",
]

_SOURCES: dict[str, tuple[str, ...]] = {
    "migrate.auto_claude": ("AutoClaudeFolder", "SkippedFile"),
    "migrate.auto_claude_import": ("AUTO_CLAUDE", "ImportReport", "SpecImport", "import_specs"),
    "migrate.auto_claude_specs": ("SpecFolder", "find_specs"),
    "migrate.insights": ("Scope",),
    "migrate.ledger": ("Ledger",),
    "migrate.migrator": (
        "FILES_TO_GRAPH", "MigrationReport", "Migrator", "Plan", "Progress", "Skipped", "dry_run",
        "make_plan", "prune",
    ),
    "migrate.verify": ("GroupCheck", "Verification", "verify"),
}

if not typing.TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, _SOURCES)
