"""Replays one memory layer into another through the protocol alone: a ledger for resuming,
verification per group, and the import of Auto-Claude memory (every spec of a project)."""

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
