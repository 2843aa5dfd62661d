"""What a team commits in a home, and the settings kept there.

A clone of a project joins its memory with ``dualmem init`` alone when the project commits
``.dualmem/project.json`` (the project's id) and ``.dualmem/config.json`` (the graph server and
the embedder, ``dualmem config set``). ``init`` writes ``.dualmem/.gitignore``: everything
else in the home is derived, this machine's own or secret (graphs, indexes, locks, damaged
copies, caches, the server's password), except the journal (``files/``), which a team may
commit if it chooses.

A server's password is never kept in ``config.json``: it comes from ``DUALMEM_GRAPH_PASSWORD``
or from ``.dualmem/graph-password`` (ignored, readable by its owner only).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping

from backends import json_read
from backends.errors import DualmemError, FileRefused
from backends.lean_typing import TYPE_CHECKING
from backends.patterns import lazy
from backends.safe_files import open_for_write, read_regular

if TYPE_CHECKING:
    from pathlib import Path

    from _typeshed import StrPath

    from backends.graph.address import ServerAddress

CONFIG = "config.json"
PASSWORD = "graph-password"
GITIGNORE = ".gitignore"
SETTINGS = {"graph-url": "graph_url", "embedder": "embedder", "llm": "llm",
            "keep-damaged": "keep_damaged", "infer-areas": "infer_areas"}
"""what ``dualmem config set NAME VALUE`` keeps, by the name the command takes"""
KEEP_DAMAGED = lazy(r"(\d{1,6})(d?)")
"""how long damaged copies of the graph are kept: a count (3) or an age in days (30d)"""
_LIMIT = 64 * 1024
IGNORED = """\
# Written by `dualmem init`. A team commits project.json (the project's id: every clone then
# shares one memory) and config.json (`dualmem config set`: the graph server, never its
# password) and, if it chooses, the journal (files/: episodes, views, tombstones, history).
# Everything else here is derived, this machine's own or secret: the graph, indexes, locks,
# damaged copies, caches, graph-password.
/*
!/.gitignore
!/project.json
!/config.json
!/entity-overrides.yaml
!/files/
/files/*
!/files/episodes/
!/files/views/
!/files/tombstones/
!/files/history.jsonl
!/files/enriched.jsonl
*.tmp
*.part
"""


class SettingsError(DualmemError):
    """A setting kept in the home cannot be read or used."""


def write_gitignore(home: Path) -> bool:
    """``<home>/.gitignore`` unless there is one (a team may have edited it); True if made."""
    try:
        fd = open_for_write(home / GITIGNORE, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(IGNORED)
    return True


def read_settings(home: StrPath) -> dict[str, str]:
    """The settings ``config.json`` keeps (none when there is no such file)."""
    path = os.path.join(home, CONFIG)
    try:
        raw = json_read.loads(read_regular(path, limit=_LIMIT, follow=False, within=home))
    except (FileNotFoundError, NotADirectoryError):  # no home yet, or no folder: said later
        return {}
    except (FileRefused, json_read.JSONDecodeError) as exc:
        raise SettingsError(f"{path}: not a dualmem settings file ({exc})") from None
    if not isinstance(raw, dict) or not all(
            isinstance(key, str) and key in SETTINGS.values() and isinstance(value, str)
            for key, value in raw.items()):
        raise SettingsError(f"{path}: not a dualmem settings file (known settings: "
                            f"{', '.join(SETTINGS.values())}, each a string)")
    return raw


def store_setting(home: Path, name: str, value: str) -> str:
    """Keep setting ``name`` (``graph-url``, ``embedder``, ``llm``) in ``config.json``; ''
    removes it. A password in a graph URL goes to ``graph-password`` instead. Returns what was
    kept, as it may be printed."""
    if name not in SETTINGS:
        raise SettingsError(f"unknown setting {name!r} (known: {', '.join(SETTINGS)})")
    settings = read_settings(home)
    shown = value
    if name == "keep-damaged" and value and not KEEP_DAMAGED().fullmatch(value):
        raise SettingsError(f"keep-damaged: {value!r} is neither a count (3) nor an age (30d)")
    if name == "infer-areas" and value not in ("", "on"):
        raise SettingsError(f"infer-areas: {value!r} is not 'on' ('' removes it)")
    if name == "graph-url" and value:
        from backends.graph.address import parse_server_url  # as in ``config._server``

        address = parse_server_url(value)
        if address.password is not None:
            _write_private(home / PASSWORD, address.password)
        value = shown = str(address._replace(password=None))
    if value:
        settings[SETTINGS[name]] = value
    else:
        settings.pop(SETTINGS[name], None)
    import orjson  # a write's: reads need not load it

    _write(home / CONFIG, orjson.dumps(settings, option=orjson.OPT_INDENT_2) + b"\n", 0o644)
    return shown


def with_password(address: ServerAddress, home: StrPath, environ: Mapping[str, str]
                  ) -> ServerAddress:
    """``address`` with the password the environment or the home's private file gives, when
    it carries none itself."""
    if address.password is not None:
        return address
    secret = environ.get("DUALMEM_GRAPH_PASSWORD") or None  # an empty one: unset
    if secret is None:
        path = os.path.join(home, PASSWORD)
        with contextlib.suppress(FileNotFoundError):
            try:
                secret = read_regular(path, limit=4096, follow=False,
                                      within=home).decode().strip()
            except (FileRefused, UnicodeDecodeError) as exc:
                raise SettingsError(f"{path}: unreadable ({exc})") from None
    return address if not secret else address._replace(password=secret)


def _write_private(path: Path, secret: str) -> None:
    _write(path, secret.encode() + b"\n", 0o600)


def _write(path: Path, data: bytes, mode: int) -> None:
    part = path.with_name(f".{path.name}.part")
    with contextlib.suppress(FileNotFoundError):
        part.unlink()
    fd = open_for_write(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(part, path)
