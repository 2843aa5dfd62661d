"""One-off import of an Auto-Claude ``memory/`` folder, read as it is.

    session_insights/session_NNN.json  one ``session_insight`` per session (the whole JSON as body),
                                       one ``task_outcome`` per completed subtask, and the
                                       discoveries' files, patterns and gotchas
    codebase_map.json                  one ``codebase_discovery`` per file, in either shape:
                                       {"discovered_files": {...}, "last_updated": ...} or a flat
                                       {path: description, ..., "_metadata": {...}}
    patterns.md, gotchas.md            one ``pattern`` / ``gotcha`` per bullet (or per dated
                                       ``## [YYYY-MM-DD HH:MM]`` section, Auto-Claude's own layout)

Every episode has a stable id from its natural key (session number, subtask, file path, folded
text), so importing twice adds nothing, and a pattern met both in a session and in patterns.md
is one memory. Times come from the data, else from the file's modification time.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from backends.errors import InvalidEpisode, MigrationError
from backends.model import MAX_NAME_CHARS, Episode, natural_key, utc

# The same values as memory.scopes; migrate sits below memory in the house.
SESSION_INSIGHT = "session_insight"
PATTERN = "pattern"
GOTCHA = "gotcha"
CODEBASE_DISCOVERY = "codebase_discovery"
TASK_OUTCOME = "task_outcome"
SOURCE = "migration"

_BULLET = re.compile(r"^\s{0,3}(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.*\S)\s*$")
_DATED = re.compile(r"\[(\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?)\]")
SESSION_FILE = re.compile(r"session_(\d+)\.json$")


class AutoClaudeFolder:
    """The episodes of an Auto-Claude memory folder; a read-only source for the migrator."""

    def __init__(self, path: Path, group_id: str) -> None:
        root = Path(path)
        if not (root / "session_insights").is_dir() and (root / "memory").is_dir():
            root = root / "memory"
        if not root.is_dir():
            raise MigrationError(f"{path}: not a folder")
        self.root = root.absolute()
        self.group_id = group_id
        self._episodes: list[Episode] | None = None

    @property
    def stream(self) -> str:
        return f"auto-claude:{self.root}"

    def episodes(self) -> list[Episode]:
        """Every episode of the folder, each id once, in a fixed order. The first mention wins:
        the codebase map is the consolidated view of files, and a session dates an insight
        better than a Markdown file's modification time."""
        if self._episodes is None:
            found: dict[str, Episode] = {}
            for episode in self._read():
                found.setdefault(episode.id, episode)
            self._episodes = sorted(found.values(), key=lambda e: (e.created_at, e.id))
        return self._episodes

    async def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        for episode in self.episodes():
            if (group_ids is None or episode.group_id in group_ids) and (
                kinds is None or episode.kind in kinds
            ):
                yield episode

    def _read(self) -> list[Episode]:
        out: list[Episode] = []
        codebase_map = self.root / "codebase_map.json"
        if codebase_map.is_file():
            out.extend(self._codebase_map(codebase_map))
        sessions = self.root / "session_insights"
        files = sorted(sessions.glob("session_*.json")) if sessions.is_dir() else []
        for file in sorted(files, key=_session_number):
            out.extend(self._session(file))
        for name, kind in (("patterns.md", PATTERN), ("gotchas.md", GOTCHA)):
            file = self.root / name
            if file.is_file():
                when = _mtime(file)
                for text, dated in _markdown_items(_read_text(file)):
                    out.append(self._insight(kind, text, dated or when))
        return out

    def _session(self, file: Path) -> list[Episode]:
        data = _read_json(file)
        if not isinstance(data, dict):
            raise MigrationError(f"{file}: expected a JSON object")
        number = _session_number(file)
        when = _time(data.get("timestamp")) or _mtime(file)
        out = [
            self._episode(
                SESSION_INSIGHT, session_key(number), f"Session {number} insights", data, when
            )
        ]
        for subtask in data.get("subtasks_completed") or []:
            label = item_text(subtask, "id", "subtask_id", "description", "title")
            body = {"subtask": subtask, "session": number, "outcome": "completed"}
            out.append(
                self._episode(TASK_OUTCOME, f"subtask-{label}", f"Completed: {label}", body, when)
            )
        discoveries = data.get("discoveries") or {}
        files = discoveries.get("files_understood") or {}
        if isinstance(files, dict):
            files = [{"path": p, "description": d} for p, d in files.items()]
        for item in files:
            path = item_text(item, "path", "file", "file_path")
            out.append(self._file(path, item, when))
        for kind, key in ((PATTERN, "patterns_found"), (GOTCHA, "gotchas_encountered")):
            for item in discoveries.get(key) or []:
                out.append(self._insight(kind, item, when))
        return out

    def _codebase_map(self, file: Path) -> list[Episode]:
        data = _read_json(file)
        if not isinstance(data, dict):
            raise MigrationError(f"{file}: expected a JSON object")
        if isinstance(data.get("discovered_files"), dict):
            entries, stamp = data["discovered_files"], data.get("last_updated")
        else:
            entries = {k: v for k, v in data.items() if k != "_metadata"}
            meta = data.get("_metadata")
            stamp = meta.get("last_updated") if isinstance(meta, dict) else None
        when = _time(stamp) or _mtime(file)
        out = []
        for path, info in entries.items():
            found = _time(info.get("discovered_at")) if isinstance(info, dict) else None
            out.append(self._file(path, info, found or when))
        return out

    def _file(self, path: str, info: Any, when: datetime) -> Episode:
        detail = dict(info) if isinstance(info, dict) else {"description": info}
        body = {"file": path} | {k: v for k, v in detail.items() if k not in ("path", "file")}
        return self._episode(CODEBASE_DISCOVERY, path, path, body, when)

    def _insight(self, kind: str, item: Any, when: datetime) -> Episode:
        text = item_text(item, kind, "text", "description", "content")
        body: Any = item if isinstance(item, dict) else text
        return self._episode(kind, natural_key(text), text, body, when)

    def _episode(self, kind: str, key: str, name: str, body: Any, when: datetime) -> Episode:
        title = " ".join(name.strip().split("\n", 1)[0].split())[:MAX_NAME_CHARS] or kind
        try:
            return Episode.create(
                group_id=self.group_id,
                kind=kind,
                key=key,
                name=title,
                body=body,
                source=SOURCE,
                created_at=when,
            )
        except InvalidEpisode as exc:
            raise MigrationError(f"{self.root}: cannot import {kind} {title!r}: {exc}") from exc


def _markdown_items(text: str) -> list[tuple[str, datetime | None]]:
    """Bullets (with their indented continuation lines), and the text of ``##`` sections
    that have no bullets (Auto-Claude's dated gotcha entries). Text before the first ``##``
    heading that is not a bullet is the file's preamble, not memory."""
    items: list[tuple[str, datetime | None]] = []
    paragraph: list[str] = []
    in_section, in_bullet, dated = False, False, None

    def flush() -> None:
        if paragraph:
            items.append(("\n".join(paragraph).strip(), dated))
            paragraph.clear()

    for line in text.splitlines():
        stripped = line.strip()
        bullet = _BULLET.match(line)
        if bullet:
            flush()
            items.append((bullet.group(1).strip(), dated))
            in_bullet = True
        elif stripped.startswith("#"):
            flush()
            in_section, in_bullet = stripped.startswith("##"), False
            stamp = _DATED.search(stripped)
            dated = _time(stamp.group(1)) if stamp else None
        elif not stripped:
            in_bullet = False
            if paragraph and paragraph[-1]:
                paragraph.append("")
        elif in_bullet and line[:1].isspace():
            items[-1] = (f"{items[-1][0]} {stripped}", items[-1][1])
        elif in_section:
            in_bullet = False
            paragraph.append(stripped)
    flush()
    return items


def item_text(item: Any, *keys: str) -> str:
    """The text of a list item that may be a string or a mapping (Auto-Claude writes both): the
    first of ``keys`` it has, else all its fields in key order, so the same item always reads
    (and is keyed) the same, whoever reads it."""
    if isinstance(item, Mapping):
        for key in keys:
            value = item.get(key)
            if isinstance(value, str | int) and str(value).strip():
                return str(value).strip()
        return "; ".join(f"{k}: {v}" for k, v in sorted(item.items()))
    return str(item).strip()


def session_key(number: int) -> str:
    """The natural key of a session's insight, shared by the importer and the agent API."""
    return f"session-{number:03d}"


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return utc(datetime.fromisoformat(value.strip().replace("Z", "+00:00")))
    except ValueError:
        return None


def _mtime(file: Path) -> datetime:
    return datetime.fromtimestamp(file.stat().st_mtime, UTC)


def _session_number(file: Path) -> int:
    found = SESSION_FILE.search(file.name)
    return int(found.group(1)) if found else 0


def _read_text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MigrationError(f"{file}: cannot read: {exc}") from exc


def _read_json(file: Path) -> Any:
    try:
        return orjson.loads(_read_text(file))
    except orjson.JSONDecodeError as exc:
        raise MigrationError(f"{file}: not JSON: {exc}") from exc
