"""Replays one memory layer into another through the protocol alone: a ledger for resuming,
verification per group, and the one-off import of an Auto-Claude memory folder."""

import typing

from backends.lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
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

_SOURCES: dict[str, tuple[str, ...]] = {
    "migrate.auto_claude": ("AutoClaudeFolder",),
    "migrate.ledger": ("Ledger",),
    "migrate.migrator": (
        "FILES_TO_GRAPH", "MigrationReport", "Migrator", "Plan", "Progress", "Skipped", "dry_run",
        "make_plan", "prune",
    ),
    "migrate.verify": ("GroupCheck", "Verification", "verify"),
}

if not typing.TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, _SOURCES)
