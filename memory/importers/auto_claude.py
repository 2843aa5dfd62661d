"""One Auto-Claude spec's ``memory/`` folder, read as it is: a read-only source for the migrator.

    session_insights/session_NNN.json  each split by ``backends.insights.split_session``
    codebase_map.json                  one ``codebase_discovery`` per file, from both of its
                                       shapes at once: flat ``{path: purpose}`` entries (beside
                                       ``_metadata``) and ``discovered_files`` ``{path:
                                       {description, category, discovered_at}}``
    patterns.md, gotchas.md            one ``pattern`` / ``gotcha`` per item
                                       (``memory.importers.auto_claude_markdown``)

Every memory is scoped to the spec (``backends.insights.Scope``), so importing twice adds nothing
and the same session number in two specs is two memories. Mentions of one memory are merged
(a file in the map and in two sessions is one memory, its later descriptions updating earlier
ones). Times come from the data (a session's ``timestamp``, a file's ``discovered_at``, the
map's ``last_updated``, a gotcha section's date), else from the file's modification time.

A file that cannot be read (unreadable, empty, not JSON such as one truncated by a crash
mid-write, not the expected shape) is skipped and listed in ``skipped``, as Auto-Claude's own
readers skip it; everything else is read. A file with bytes that are not UTF-8 (an editor's
Latin-1 save) is read with each bad sequence replaced by U+FFFD, so that its good lines are not
lost with the bad, and listed in ``mended`` with how many bytes on which lines. With ``strict``,
the first damaged file raises ``MigrationError`` instead.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from backends.errors import FileRefused, InvalidEpisode, MigrationError
from backends.insights import (
    Scope,
    file_discovery,
    fold,
    insight,
    parse_time,
    session_number,
    split_session,
)
from backends.kinds import GOTCHA, PATTERN
from backends.model import Episode
from backends.safe_files import MiB, read_regular
from memory.importers.auto_claude_markdown import markdown_items

# Files a memory folder may hold; one of them marks a folder as an Auto-Claude memory folder.
SESSIONS = "session_insights"
CODEBASE_MAP = "codebase_map.json"
MARKDOWN = {"patterns.md": PATTERN, "gotchas.md": GOTCHA}
MEMORY_FILES = (SESSIONS, CODEBASE_MAP, *MARKDOWN)
FILE_LIMIT = 64 * MiB
"""the most of one memory file that is read (Auto-Claude's grow by appending: a few MiB)"""
# Keys of codebase_map.json that are not files.
_MAP_META = ("_metadata", "discovered_files", "last_updated")


@dataclass(frozen=True)
class SkippedFile:
    path: Path
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"path": shown(self.path), "reason": self.reason}


@dataclass(frozen=True)
class MendedFile:
    """A file read with its bytes that are not UTF-8 replaced."""

    path: Path
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"path": shown(self.path), "reason": self.reason}


class AutoClaudeFolder:
    """The memories of one spec's Auto-Claude ``memory`` folder, read once, on first use. Each
    file read is a regular file inside ``within`` (default: the memory folder), the folder the
    import was pointed at: one that is a link, or lies out of it through a linked folder, is
    skipped and reported, never read."""

    def __init__(self, root: Path, scope: Scope, *, strict: bool = False,
                 within: Path | None = None) -> None:
        self.root = Path(root).absolute()
        self.within = self.root if within is None else Path(within).absolute()
        self.scope = scope
        self.strict = strict
        self.skipped: list[SkippedFile] = []
        self.mended: list[MendedFile] = []
        self._episodes: list[Episode] | None = None

    @property
    def stream(self) -> str:
        """The ledger stream of this folder: the same however the import found it."""
        return f"auto-claude:{shown(self.root)}"

    def episodes(self) -> list[Episode]:
        """Every memory of the folder, each id once, oldest first. Raises ``MigrationError``
        with ``strict`` at the first damaged file."""
        if self._episodes is None:
            found = fold(self._read())
            self._episodes = sorted(found, key=lambda e: (e.created_at, e.id))
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
        out += self._each(self.root / CODEBASE_MAP, self._codebase_map)
        sessions = self.root / SESSIONS
        for file in sorted(sessions.glob("session_*.json")) if sessions.is_dir() else []:
            out += self._each(file, self._session)
        dated: dict[str, datetime] = {}
        for episode in out:
            dated[episode.id] = max(dated.get(episode.id, episode.created_at), episode.created_at)
        for name, kind in MARKDOWN.items():
            out += self._each(self.root / name, partial(self._markdown, kind=kind, dated=dated))
        return out

    def _each(self, file: Path, read: Callable[[Path], list[Episode]]) -> list[Episode]:
        """The memories ``read`` finds in ``file`` (none when it is absent); a damaged file is
        skipped whole, so that no half-read file is imported."""
        if not os.path.lexists(file):  # a dangling link or a folder in its place is damage
            return []
        try:
            return read(file)
        except (MigrationError, InvalidEpisode) as exc:  # the file's own damage, said briefly
            if self.strict:
                raise MigrationError(f"{file}: {exc}") from exc
            self.mended = [mended for mended in self.mended if mended.path != file]
            self.skipped.append(SkippedFile(file, str(exc)))
            return []

    def _session(self, file: Path) -> list[Episode]:
        data = _json_object(self._text(file))
        number = session_number(data, file.name)
        if number is None:
            raise MigrationError("no session number (neither session_number nor session_NNN.json)")
        when = parse_time(data.get("timestamp")) or _mtime(file)
        return split_session(self.scope, number, data, when)

    def _codebase_map(self, file: Path) -> list[Episode]:
        data = _json_object(self._text(file))
        meta = data.get("_metadata")
        stamp = parse_time(meta.get("last_updated") if isinstance(meta, Mapping) else None)
        when = stamp or parse_time(data.get("last_updated")) or _mtime(file)
        flat = [(k, v) for k, v in data.items() if k not in _MAP_META]
        discovered = data.get("discovered_files")
        # Both shapes may name one file: each is a mention of it, merged by time.
        entries = [*flat, *(discovered.items() if isinstance(discovered, Mapping) else ())]
        out = []
        for path, about in entries:
            info = dict(about) if isinstance(about, Mapping) else {"description": about}
            found = parse_time(info.get("discovered_at")) or when
            out.append(file_discovery(self.scope, {"path": path, **info}, found))
        return out

    def _markdown(self, file: Path, kind: str, dated: Mapping[str, datetime]) -> list[Episode]:
        """The file's items. A bullet has no date of its own: it takes the latest time its
        memory has elsewhere (a session), else the file's modification time."""
        items = markdown_items(self._text(file))
        modified = _mtime(file)
        out = []
        for item in items:
            detail = {kind: item.text, "context": item.context} if item.context else item.text
            found = insight(self.scope, kind, detail, item.when or modified)
            if found is not None and item.when is None and found.id in dated:
                found = found.model_copy(update={"created_at": dated[found.id]})
            if found is not None:
                out.append(found)
        return out


    def _text(self, file: Path) -> str:
        """The file's text; bytes that are not UTF-8 are replaced and the file listed in
        ``mended`` (``strict``: they make it a damaged file)."""
        try:
            raw = read_regular(file, limit=FILE_LIMIT, follow=False, within=self.within)
        except FileRefused as exc:  # a link out of the import, a FIFO, /dev/zero
            raise MigrationError(exc.reason) from None
        except OSError as exc:
            raise MigrationError(f"cannot read: {exc.strerror or exc}") from None
        if not raw.strip():
            raise MigrationError("empty file")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if self.strict:
                bad = f"byte {raw[exc.start]:#04x} at offset {exc.start}"
                raise MigrationError(f"not UTF-8 ({bad})") from None
        count, lines = _undecodable(raw)
        where = ", ".join(map(str, lines[:10])) + (", ..." if len(lines) > 10 else "")
        self.mended.append(MendedFile(file, f"{count} byte(s) not UTF-8 on {len(lines)} line(s) "
                                            f"({where}), replaced by U+FFFD"))
        return raw.decode("utf-8", errors="replace")


def is_memory_folder(folder: Path) -> bool:
    """True when ``folder`` holds any of Auto-Claude's memory files."""
    return any((folder / name).exists() for name in MEMORY_FILES)


def shown(path: Path) -> str:
    """``path`` as text that can be stored and printed: a byte of its name that is not UTF-8
    (a folder named ``\\xff``) is shown as ``\\xff``; a UTF-8 path is unchanged."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _undecodable(raw: bytes) -> tuple[int, list[int]]:
    """How many bytes of ``raw`` are not UTF-8, and on which lines (from 1)."""
    count, lines = 0, list[int]()
    for number, line in enumerate(raw.split(b"\n"), start=1):
        at = 0
        while True:
            try:
                line[at:].decode("utf-8")
                break
            except UnicodeDecodeError as exc:
                count += exc.end - exc.start
                at += exc.end
                if not lines or lines[-1] != number:
                    lines.append(number)
    return count, lines


def _json_object(text: str) -> dict[str, Any]:
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise MigrationError(f"not valid JSON, truncated or corrupt ({exc})") from None
    if not isinstance(data, dict):
        raise MigrationError(f"expected a JSON object, found {type(data).__name__}")
    return data


def _mtime(file: Path) -> datetime:
    return datetime.fromtimestamp(file.stat().st_mtime, UTC)
