"""The project's stable id, kept in ``<home>/project.json`` so it survives moving the folder.

The file also records where the home was made: the project's folder and its git remote
(``{"project_id": ..., "folder": ..., "git_remote": ...}``; files written before hold the id
alone and read as ever). A home copied into another project keeps the id, and two projects
sharing an id share their memories on a shared graph server: ``relocation`` tells a moved or
copied home by comparing the record with where the home is now. A clone of the same repository
(the same remote) is the same project wherever it lies.
"""

from __future__ import annotations

import os
import re

from backends import json_read
from backends.errors import StoreCorrupt, WriteFailed
from backends.lean_typing import TYPE_CHECKING, NamedTuple
from backends.model import check_group_id
from backends.safe_files import open_for_write, read_regular
from memory.store.home import absolute
from memory.store.home import project_folder as project_folder

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Self

    from _typeshed import StrPath

PROJECT_FILE_LIMIT = 64 << 10
"""a project file holds an id and where it was made: a few hundred bytes"""
GIT_PATIENCE = 10.0
"""seconds ``git config`` may take to name the remote (it reads one file)"""


class Place(NamedTuple):
    """Where a home is: its project's folder and that folder's git remote (``origin``)."""

    folder: str
    git_remote: str | None = None

    @classmethod
    def of(cls, home: StrPath) -> Self:
        folder = os.path.dirname(absolute(home))
        return cls(folder, _git_remote(folder))


class ProjectRecord(NamedTuple):
    project_id: str
    place: Place | None = None
    """where the home was made; None in a file written before places were recorded"""

    def to_json(self) -> dict[str, str]:
        data = {"project_id": self.project_id}
        if self.place is not None:
            data["folder"] = self.place.folder
            if self.place.git_remote is not None:
                data["git_remote"] = self.place.git_remote
        return data


def read_project(project_file: StrPath) -> ProjectRecord | None:
    """What ``project_file`` records, or None when the home has no project file yet.
    ``FileRefused`` when it is a link, a FIFO, a folder or too big: a hook must never block on
    it; ``StoreCorrupt`` when it cannot be read or is no project file."""
    try:
        raw = read_regular(project_file, limit=PROJECT_FILE_LIMIT, follow=False)
    except FileNotFoundError:
        return None
    except OSError as exc:  # the home is no folder (--home /dev/null), or unreadable
        raise StoreCorrupt(project_file, f"cannot be read: {exc.strerror or exc}") from None
    try:
        data = json_read.loads(raw)
        project_id = check_group_id(data["project_id"])
        folder, remote = data.get("folder"), data.get("git_remote")
        if not isinstance(folder, str | None) or not isinstance(remote, str | None):
            raise TypeError("folder and git_remote are text")
    except (json_read.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StoreCorrupt(project_file, f"not a project file ({exc})") from None
    return ProjectRecord(project_id, None if folder is None else Place(folder, remote))


def read_project_id(project_file: StrPath) -> str | None:
    """The recorded id, or None when the home has no project file yet (see ``read_project``)."""
    record = read_project(project_file)
    return None if record is None else record.project_id


def ensure_project_id(project_file: StrPath, name_hint: str) -> tuple[str, bool]:
    """The project's id, created on first use: ``(id, created)``. ``name_hint`` (usually the
    project folder's name) makes the id readable; a random suffix makes it unique. A new file
    records where the home is."""
    existing = read_project_id(project_file)
    if existing is not None:
        return existing, False
    record = ProjectRecord(_new_id(name_hint), Place.of(os.path.dirname(project_file)))
    if not _write(project_file, record, replace=False):  # another first run won: its id holds
        return ensure_project_id(project_file, name_hint)
    return record.project_id, True


def renew_project_id(project_file: Path, name_hint: str) -> tuple[str | None, str]:
    """A new id for the home, recorded where it is now: ``(old id or None, new id)``. For a
    home copied from another project, which must not share that project's group."""
    old = read_project_id(project_file)
    record = ProjectRecord(_new_id(name_hint), Place.of(project_file.parent))
    _write(project_file, record, replace=True)
    return old, record.project_id


def record_place(project_file: Path, record: ProjectRecord) -> None:
    """Record where the home is now, keeping its id (a moved project, an older file)."""
    _write(project_file, ProjectRecord(record.project_id, Place.of(project_file.parent)),
           replace=True)


def relocation(record: ProjectRecord, here: Place) -> str | None:
    """What differs between where the home was recorded and ``here``, or None: nothing does,
    nothing was recorded (an older file), or the remote names the same repository (a clone or
    a move of one project)."""
    was = record.place
    if was is None:
        return None
    if was.git_remote and here.git_remote:
        if was.git_remote == here.git_remote:
            return None
        return (f"project id {record.project_id} was recorded for the git remote "
                f"{was.git_remote}; the project here has {here.git_remote}")
    if os.path.realpath(was.folder) != os.path.realpath(here.folder):
        return (f"project id {record.project_id} was recorded in {was.folder}; this home is "
                f"in {here.folder}")
    return None


def project_id(home: StrPath) -> str:
    """The stable id of the project whose memory lives in ``home``, created on first use and
    named after the project folder (the parent of ``home``)."""
    folder = absolute(home)
    return ensure_project_id(os.path.join(folder, "project.json"), _parent_name(folder))[0]


def planned_project_id(home: StrPath) -> str:
    """``project_id(home)`` without creating it (for a dry run): the recorded id, else the
    readable part of the id the first write will make."""
    folder = absolute(home)
    return read_project_id(os.path.join(folder, "project.json")) or _slug(_parent_name(folder))


def _parent_name(folder: str) -> str:
    return os.path.basename(os.path.dirname(folder))


def _slug(name_hint: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name_hint).strip("-")[:40] or "project"


def _new_id(name_hint: str) -> str:
    import uuid  # only a new home mints an id

    return f"{_slug(name_hint)}-{uuid.uuid4().hex[:8]}"


def _write(project_file: StrPath, record: ProjectRecord, *, replace: bool) -> bool:
    """Write ``record`` durably as ``project_file``: whether this call wrote it (without
    ``replace``, a file already there is kept). ``WriteFailed`` when it cannot be written."""
    import uuid

    import orjson  # a write's: reads need not load it

    folder, name = os.path.split(project_file)
    temp = os.path.join(folder, f".{name}.{uuid.uuid4().hex}")
    try:
        os.makedirs(folder, exist_ok=True)
        fd = open_for_write(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        with os.fdopen(fd, "wb") as out:
            out.write(orjson.dumps(record.to_json(), option=orjson.OPT_INDENT_2) + b"\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            if replace:
                os.replace(temp, project_file)
            else:
                # link() never replaces: of two concurrent first runs, exactly one id wins.
                os.link(temp, project_file)
        except FileExistsError:
            return False
        finally:
            try:  # noqa: SIM105 (contextlib's import costs a lean Stop ~3M instructions)
                os.unlink(temp)
            except FileNotFoundError:
                pass
    except OSError as exc:
        raise WriteFailed(f"cannot record the project's id in {project_file}: "
                          f"{exc.strerror or exc}") from None
    return True


def committed(project_file: Path) -> bool:
    """Whether the git repository holding ``project_file`` tracks it: it came with the project
    (a clone's, whose recorded place is the first clone's), and is the team's to change."""
    import subprocess  # only a write asks git: a read would pay its import (~10 ms) for nothing

    try:
        done = subprocess.run(["git", "-C", str(project_file.parent), "ls-files",
                               "--error-unmatch", "--", project_file.name],
                              capture_output=True, timeout=GIT_PATIENCE,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _git_remote(folder: StrPath) -> str | None:
    """The repository the ``origin`` remote of the git repository holding ``folder`` names
    (``_repository``), or None (no repository, no such remote, no git)."""
    import subprocess  # as in ``committed``

    try:
        done = subprocess.run(["git", "-C", str(folder), "config", "--get", "remote.origin.url"],
                              capture_output=True, text=True, timeout=GIT_PATIENCE,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    remote = done.stdout.strip()
    # Recorded without its user or token (the file may be committed), as the repository's name.
    return _repository(remote) if done.returncode == 0 and remote else None


def _repository(remote: str) -> str:
    """A remote's URL without what differs between clones of one repository: the scheme, the
    user, a ``.git`` suffix (``git@host:org/repo.git`` and ``https://host/org/repo`` agree)."""
    url = remote.strip().rstrip("/").removesuffix(".git")
    found = re.match(r"[a-z][a-z0-9+.-]*://(?:[^@/]*@)?([^/:]+)(?::\d*)?/(.*)", url, re.I) or (
        re.match(r"(?:[^@/]*@)?([^/:]+):(.*)", url))  # scp-like: user@host:org/repo
    return f"{found[1].lower()}/{found[2]}" if found else url

