"""Finding the Auto-Claude specs below a folder. Auto-Claude keeps one memory folder per spec:

    <project>/.auto-claude/specs/<NNN-name>/memory/

and the import may be pointed at any level of that path: a spec's ``memory/`` folder, a spec
folder, ``specs/``, ``.auto-claude/``, or the project root. A spec is named after its folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backends.errors import MigrationError
from memory.importers.auto_claude import is_memory_folder, shown

MEMORY = "memory"
# Where specs are looked for below the given folder, nearest first: the project root, then
# .auto-claude/, then specs/ itself.
_SPEC_PARENTS = (Path(".auto-claude", "specs"), Path("specs"), Path())


@dataclass(frozen=True)
class SpecFolder:
    memory: Path
    """the spec's memory folder"""
    folder: Path
    """the spec's folder, which names it"""

    @property
    def name(self) -> str:
        return shown(Path(self.folder.name))


def find_specs(path: Path) -> list[SpecFolder]:
    """The specs at or below ``path``, by name. Raises ``MigrationError`` (one line) when
    ``path`` is not a folder or holds no spec."""
    folder = Path(path).resolve()
    if not folder.is_dir():
        raise MigrationError(f"{path}: not a folder")
    if is_memory_folder(folder) or folder.name == MEMORY:
        spec = folder.parent if folder.name == MEMORY else folder
        return [SpecFolder(folder, spec)]
    if is_memory_folder(folder / MEMORY):
        return [SpecFolder(folder / MEMORY, folder)]
    for parent in _SPEC_PARENTS:
        specs = sorted(
            (SpecFolder(spec / MEMORY, spec) for spec in _folders(folder / parent)
             if (spec / MEMORY).is_dir()),
            key=lambda s: s.name,
        )
        if specs:
            return specs
    raise MigrationError(
        f"no Auto-Claude memory found at or below {path} (looked for a memory folder, "
        f"<spec>/memory, specs/<spec>/memory and .auto-claude/specs/<spec>/memory)"
    )


def _folders(parent: Path) -> list[Path]:
    try:
        return [child for child in parent.iterdir() if child.is_dir()]
    except OSError:  # absent or unreadable: no specs there
        return []
