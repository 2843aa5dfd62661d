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

from backends.errors import DualmemError
from backends.lean_typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import StrPath

HOME_DIR = ".dualmem"
SAFE_HOMES = "DUALMEM_SAFE_HOMES"
"""homes (or the folders holding them) trusted whoever owns them, separated by ``:``; ``*``
trusts every home"""
_MARKS = ("project.json", "files", "graph", "graph-ladybug")


class HomeNotFound(DualmemError):
    """A command that only reads was pointed at a folder that holds no memory."""


class ForeignHome(DualmemError):
    """The home found above the working folder belongs to another user; nothing was opened."""


def discover_home(start: StrPath) -> str | None:
    """The nearest ``.dualmem/`` folder in ``start`` or its parents, or None."""
    folder = os.fspath(start)
    while True:
        candidate = os.path.join(folder, HOME_DIR)
        if os.path.isdir(candidate):
            return candidate
        if os.path.dirname(folder) == folder:
            return None
        folder = os.path.dirname(folder)


def check_owner(home: StrPath, safe_homes: str) -> None:
    """``ForeignHome`` unless ``home`` (the folder and, when it is a link, what it leads to)
    belongs to this process's user, or ``safe_homes`` lists it. Root is no exception: a home
    someone else planted is exactly what root must not write into."""
    me = os.geteuid()
    others = {os.lstat(home).st_uid, os.stat(home).st_uid} - {me}
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


def is_home(path: StrPath) -> bool:
    return os.path.isdir(path) and any(os.path.exists(os.path.join(path, mark))
                                       for mark in _MARKS)


def require_home(path: StrPath) -> None:
    """``HomeNotFound`` unless ``path`` holds a memory home: reading must never create one."""
    if not is_home(path):
        raise HomeNotFound(
            f"no memory home at {path}: run `dualmem init` in the project folder first, or "
            "point --home or DUALMEM_HOME at an existing home"
        )


def absolute(path: StrPath) -> str:
    """``path`` joined to the working folder when it is relative, as ``Path.absolute`` joins it
    (no ``..`` taken away: a link's ``..`` is not the folder that holds the link)."""
    path = os.fspath(path)
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


def project_folder(home: StrPath, cwd: StrPath | None) -> str:
    """The folder whose files a session's paths are relative to: the one holding the home, or
    the session's own when the home lives elsewhere (``DUALMEM_HOME``)."""
    if os.path.basename(home) == HOME_DIR or cwd is None:
        return os.path.dirname(home)
    return os.fspath(cwd)
