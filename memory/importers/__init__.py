"""Importers: memory written by other tools, read as it is and replayed into a store by the
migrator (``migrate``) under a ledger. Auto-Claude's memory folders (every spec of a project)
are the one source so far; their session files are split as the agent API splits them
(``backends.insights``)."""

import typing

from backends.lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from memory.importers.auto_claude import AutoClaudeFolder, SkippedFile
    from memory.importers.auto_claude_import import (
        AUTO_CLAUDE,
        ImportReport,
        SpecImport,
        import_specs,
    )
    from memory.importers.auto_claude_specs import SpecFolder, find_specs

__all__ = [
    "AUTO_CLAUDE",
    "AutoClaudeFolder",
    "ImportReport",
    "SkippedFile",
    "SpecFolder",
    "SpecImport",
    "find_specs",
    "import_specs",
]

_SOURCES: dict[str, tuple[str, ...]] = {
    "memory.importers.auto_claude": ("AutoClaudeFolder", "SkippedFile"),
    "memory.importers.auto_claude_import": ("AUTO_CLAUDE", "ImportReport", "SpecImport",
                                            "import_specs"),
    "memory.importers.auto_claude_specs": ("SpecFolder", "find_specs"),
}

if not typing.TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, _SOURCES)
