"""The project's stable id, kept in ``<home>/project.json`` so it survives moving the folder."""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

import orjson

from backends.errors import StoreCorrupt
from backends.model import check_group_id


def read_project_id(project_file: Path) -> str | None:
    """The recorded id, or None when the home has no project file yet."""
    try:
        raw = project_file.read_bytes()
    except FileNotFoundError:
        return None
    try:
        value = orjson.loads(raw)["project_id"]
        return check_group_id(value)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise StoreCorrupt(project_file, f"not a project file ({exc})") from None


def ensure_project_id(project_file: Path, name_hint: str) -> tuple[str, bool]:
    """The project's id, created on first use: ``(id, created)``. ``name_hint`` (usually the
    project folder's name) makes the id readable; a random suffix makes it unique."""
    existing = read_project_id(project_file)
    if existing is not None:
        return existing, False
    project_id = f"{_slug(name_hint)}-{uuid.uuid4().hex[:8]}"
    project_file.parent.mkdir(parents=True, exist_ok=True)
    temp = project_file.with_name(f".{project_file.name}.{uuid.uuid4().hex}")
    with temp.open("xb") as out:
        out.write(orjson.dumps({"project_id": project_id}, option=orjson.OPT_INDENT_2) + b"\n")
        out.flush()
        os.fsync(out.fileno())
    try:
        # link() never replaces: of two concurrent first runs, exactly one id wins.
        os.link(temp, project_file)
    except FileExistsError:
        return ensure_project_id(project_file, name_hint)
    finally:
        temp.unlink()
    return project_id, True


def project_id(home: str | os.PathLike[str]) -> str:
    """The stable id of the project whose memory lives in ``home``, created on first use and
    named after the project folder (the parent of ``home``)."""
    folder = Path(home).absolute()
    return ensure_project_id(folder / "project.json", folder.parent.name)[0]


def planned_project_id(home: str | os.PathLike[str]) -> str:
    """``project_id(home)`` without creating it (for a dry run): the recorded id, else the
    readable part of the id the first write will make."""
    folder = Path(home).absolute()
    return read_project_id(folder / "project.json") or _slug(folder.parent.name)


def _slug(name_hint: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name_hint).strip("-")[:40] or "project"
