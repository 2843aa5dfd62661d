"""Replays one memory layer into another through the protocol alone: a ledger for resuming and
verification per group. The importers that replay through it (Auto-Claude memory) live in
``memory.importers``."""

import typing

from backends.lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
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
    "migrate.ledger": ("Ledger",),
    "migrate.migrator": (
        "FILES_TO_GRAPH", "MigrationReport", "Migrator", "Plan", "Progress", "Skipped", "dry_run",
        "make_plan", "prune",
    ),
    "migrate.verify": ("GroupCheck", "Verification", "verify"),
}

if not typing.TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, _SOURCES)
