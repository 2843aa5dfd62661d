"""Where a memory home is: given, or found the way git finds ``.git``.

A home is a folder holding ``project.json``, ``files/`` or ``graph/`` (``dualmem init`` makes
all three). Discovery takes the nearest ``.dualmem/`` in a folder or any of its parents, so
every subfolder of a project shares the project's memory.

A home found that way must belong to the user running dualmem (as git's ``safe.directory``,
CVE-2022-24765): anyone may create ``/tmp/.dualmem``, and every process working below ``/tmp``
would then write its memories into it, read what its planter put there, and write through the
links planted in it. A home named (``--home``, ``DUALMEM_HOME``) or listed in
``DUALMEM_SAFE_HOMES`` is trusted as it is.
"""

from __future__ import annotations

import os
from pathlib import Path

from backends.errors import DualmemError

HOME_DIR = ".dualmem"
SAFE_HOMES = "DUALMEM_SAFE_HOMES"
"""homes (or the folders holding them) trusted whoever owns them, separated by ``:``; ``*``
trusts every home"""
_MARKS = ("project.json", "files", "graph", "graph-ladybug")


class HomeNotFound(DualmemError):
    """A command that only reads was pointed at a folder that holds no memory."""


class ForeignHome(DualmemError):
    """The home found above the working folder belongs to another user; nothing was opened."""


def discover_home(start: Path) -> Path | None:
    """The nearest ``.dualmem/`` folder in ``start`` or its parents, or None."""
    for folder in (start, *start.parents):
        candidate = folder / HOME_DIR
        if candidate.is_dir():
            return candidate
    return None


def check_owner(home: Path, safe_homes: str) -> None:
    """``ForeignHome`` unless ``home`` (the folder and, when it is a link, what it leads to)
    belongs to this process's user, or ``safe_homes`` lists it. Root is no exception: a home
    someone else planted is exactly what root must not write into."""
    me = os.geteuid()
    others = {home.lstat().st_uid, home.stat().st_uid} - {me}
    if not others:
        return
    listed = {entry for entry in safe_homes.split(os.pathsep) if entry}
    real = os.path.realpath(home)
    if "*" in listed or any(os.path.realpath(entry) in (real, os.path.dirname(real))
                            for entry in listed):
        return
    raise ForeignHome(
        f"{home} belongs to another user (uid {min(others)}), not to you (uid {me}): a home "
        f"found above the working folder may have been planted there. If you trust it, name "
        f"it (--home {home} or DUALMEM_HOME) or list it in {SAFE_HOMES}"
    )


def is_home(path: Path) -> bool:
    return path.is_dir() and any((path / mark).exists() for mark in _MARKS)


def require_home(path: Path) -> None:
    """``HomeNotFound`` unless ``path`` holds a memory home: reading must never create one."""
    if not is_home(path):
        raise HomeNotFound(
            f"no memory home at {path}: run `dualmem init` in the project folder first, or "
            "point --home or DUALMEM_HOME at an existing home"
        )


def project_folder(home: Path, cwd: Path | None) -> Path:
    """The folder whose files a session's paths are relative to: the one holding the home, or
    the session's own when the home lives elsewhere (``DUALMEM_HOME``)."""
    return home.parent if home.name == HOME_DIR or cwd is None else cwd
