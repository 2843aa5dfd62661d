"""Where a memory home is: given, or found the way git finds ``.git``.

A home is a folder holding ``project.json``, ``files/`` or ``graph/`` (``dualmem init`` makes
all three). Discovery takes the nearest ``.dualmem/`` in a folder or any of its parents, so
every subfolder of a project shares the project's memory.
"""

from __future__ import annotations

from pathlib import Path

from backends.errors import DualmemError

HOME_DIR = ".dualmem"
_MARKS = ("project.json", "files", "graph", "graph-ladybug")


class HomeNotFound(DualmemError):
    """A command that only reads was pointed at a folder that holds no memory."""


def discover_home(start: Path) -> Path | None:
    """The nearest ``.dualmem/`` folder in ``start`` or its parents, or None."""
    for folder in (start, *start.parents):
        candidate = folder / HOME_DIR
        if candidate.is_dir():
            return candidate
    return None


def is_home(path: Path) -> bool:
    return path.is_dir() and any((path / mark).exists() for mark in _MARKS)


def require_home(path: Path) -> None:
    """``HomeNotFound`` unless ``path`` holds a memory home: reading must never create one."""
    if not is_home(path):
        raise HomeNotFound(
            f"no memory home at {path}: run `dualmem init` in the project folder first, or "
            "point --home or DUALMEM_HOME at an existing home"
        )
