"""Replays one memory layer into another through the protocol alone: a ledger for resuming,
verification per group, and the one-off import of an Auto-Claude memory folder."""

from migrate.auto_claude import AutoClaudeFolder
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
    "FILES_TO_GRAPH",
    "AutoClaudeFolder",
    "GroupCheck",
    "Ledger",
    "MigrationReport",
    "Migrator",
    "Plan",
    "Progress",
    "Skipped",
    "Verification",
    "dry_run",
    "make_plan",
    "prune",
    "verify",
]
