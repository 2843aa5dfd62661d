"""The memories the journal's index links to a file, read straight from ``index.sqlite3``
without opening the file layer. Claude Code's PostToolUse hook asks this for the first file of
each tool call a session makes: a process that imports the layer, the model and the command
line to answer costs more than the 150 ms a tool call may wait, and the index already keeps the
links (``fallback.entities``: each memory's file and module entities, in every process alike).

It answers only when the index agrees with the files: the group's folder has not moved since
the index took it in, and no view of the group (a bullet typed into ``gotchas.md`` is a memory)
changed, appeared or went. Otherwise, or when the index is missing, of another layout or
unreadable, it says it cannot (None): the caller opens the layer, whose open brings the index
up to date, and asks again. It imports ``sqlite3``, ``json`` and ``hashlib``, little more.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from backends.kinds import ADR, CODEBASE_DISCOVERY, FAILED_APPROACH, GOTCHA, PATTERN
from backends.search.entity_ids import entity_uuid
from backends.texts import json_body
from fallback.file_record import signature_of

FILE = "index.sqlite3"
LAYOUT = "7"
"""the first part of the index's schema (``fallback.index.SCHEMA_VERSION``): the tables read
here; another layout is not read"""
NAMED_LABELS = ("File", "Module")
ABOUT_FIRST = (CODEBASE_DISCOVERY, GOTCHA, FAILED_APPROACH, PATTERN, ADR)
"""the kinds that say something of a file itself, in this order, before those that list it
among others (a session's insight, a task's outcome)"""


# Fields given as types, not written as annotations: a class-syntax NamedTuple compiles each
# annotation's string (``typing.ForwardRef``), and the first ``compile`` of a process builds
# the AST's types, 10M instructions of the tool hook's quick answer.
class Stored(NamedTuple("Stored", [("id", str), ("kind", str), ("name", str), ("body", str),
                                   ("created_at", str), ("invalid_at", datetime | None)])):
    """A memory as the index keeps it: what showing it (``memory.agent.lines.describe``) and
    its validity (``memory.agent.validity.in_force``) read."""

    __slots__ = ()

    @property
    def data(self) -> Any:
        """The parsed JSON body, or None for plain text (as ``Episode.data``)."""
        return json_body(self.body)


def naming(root: Path, group: str, names: Sequence[str]) -> list[list[Stored]] | None:
    """For each of ``names`` (a project path or module), the memories of ``group`` that name it,
    by kind (``ABOUT_FIRST``), then newest first; None when the index of the journal at
    ``root`` cannot say for sure."""
    # A URI opens it read-only (no journal files made); only these characters need escaping
    # there (``pathlib``'s as_uri imports urllib, a tenth of a quick answer's time).
    where = str((root / FILE).absolute())
    for char, escaped in (("%", "%25"), ("?", "%3f"), ("#", "%23")):
        where = where.replace(char, escaped)
    try:
        db = sqlite3.connect(f"file:{where}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        if not _current(db, root, group):
            return None
        return [_naming(db, group, name) for name in names]
    except (sqlite3.Error, ValueError, TypeError, KeyError):
        return None
    finally:
        db.close()


def _current(db: sqlite3.Connection, root: Path, group: str) -> bool:
    """Whether the index holds what the files of ``group`` hold (``fallback.intake``'s checks,
    for one group): its episode folder's mtime and its views' signatures as recorded."""
    schema = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if schema is None or schema[0].split(".")[0] != LAYOUT:
        return False
    folders = [(Path(path), mtime) for path, mtime in db.execute("SELECT path, mtime FROM folders")
               if Path(path).name == group and Path(path).is_relative_to(root)]
    if len(folders) != 1 or _mtime(folders[0][0]) != folders[0][1]:
        return False
    views = {Path(path): sig for path, sig in db.execute("SELECT path, sig FROM views")
             if Path(path).parent.name == group and Path(path).is_relative_to(root)}
    shelves = {path.parent for path in views}
    if len(shelves) != 1:  # no view yet (one typed by hand would not be seen), or several
        return False
    try:
        with os.scandir(shelves.pop()) as entries:
            present = {Path(entry.path) for entry in entries if entry.name.endswith(".md")}
    except OSError:
        return False
    return present == set(views) and all(signature_of(path) == sig for path, sig in views.items())


def _naming(db: sqlite3.Connection, group: str, name: str) -> list[Stored]:
    ids = [entity_uuid(group, label, name) for label in NAMED_LABELS]
    rows = db.execute(
        "SELECT e.doc FROM ent_mentions m JOIN episodes e ON e.id = m.episode"
        " WHERE m.uuid IN (?, ?) AND m.grp = ? GROUP BY e.id", (*ids, group)).fetchall()
    found = sorted((_stored(json.loads(doc)) for (doc,) in rows),
                   key=lambda m: (m.created_at, m.id), reverse=True)
    last = len(ABOUT_FIRST)
    return sorted(found, key=lambda m: ABOUT_FIRST.index(m.kind) if m.kind in ABOUT_FIRST
                  else last)


def _stored(doc: dict[str, Any]) -> Stored:
    ended = doc.get("invalid_at")
    return Stored(doc["id"], doc["kind"], doc["name"], doc["body"], doc["created_at"],
                  None if ended is None else datetime.fromisoformat(ended))


def _mtime(folder: Path) -> int | None:
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return None
