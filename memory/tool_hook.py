"""Claude Code's PostToolUse, just in time: when the agent opens or changes a file, what the
project's memory says about that file, before it acts on it.

``Read``, ``Edit``, ``Write``, ``MultiEdit`` and ``NotebookEdit`` name their file
(``tool_input.file_path`` or ``notebook_path``); a ``Bash`` command names files by their paths,
or runs the tests (``pytest``, ``make test``, ...: the ``tests/`` area). The answer is the few
memories that name one of those files and that this session was not shown yet, within
``TOOL_TOKENS``; a file is answered once per session, and nothing at all is said when no
memory names it. What a session was shown is kept in the home (``<home>/hooks/``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backends.errors import FileRefused
from backends.safe_files import MiB, overwrite, read_regular
from memory.workset import named_files, project_path

if TYPE_CHECKING:
    from backends.model import Episode
    from backends.protocol import MemoryBackend
    from fallback.file_links import Stored

TOOL_TOKENS = 300
TOOL_LIMIT = 3
"""memories told about one tool call"""
FILE_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit"})
MATCHER = "|".join(sorted(FILE_TOOLS | {"Bash"}))
FOLDER = "hooks"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_TESTS = (r"(?:^|[\s;&|(])(?:pytest|py\.test|tox|nox|(?:make|npm|yarn|pnpm|go|cargo|"
          r"mix|gradle|mvn|bundle exec rspec|rspec|jest|vitest)\b[^;&|]*\btest)")
"""a command that runs tests: compiled by its first search (``re``'s cache), which only a
``Bash`` call makes"""


def tool_files(tool: str, given: Mapping[str, Any], root: Path) -> list[str]:
    """The project files a tool call works on, relative to ``root``."""
    if tool in FILE_TOOLS:
        path = given.get("file_path") or given.get("notebook_path")
        return [project_path(path, root)] if isinstance(path, str) and path.strip() else []
    command = given.get("command") if tool == "Bash" else None
    if not isinstance(command, str):
        return []
    found = [project_path(path, root) for path in named_files(command)]
    if not found and re.search(_TESTS, command):
        found = ["tests/"]
    return [f for f in dict.fromkeys(found) if not f.startswith(("/", "../"))]


def told_sessions(home: Path, limit: int = 5) -> list[tuple[str, list[str]]]:
    """The sessions whose hooks recorded a working set, latest first, each with its files."""
    try:
        found = sorted((home / FOLDER).glob("*.json"), key=lambda p: p.stat().st_mtime,
                       reverse=True)
    except OSError:
        return []
    return [(path.stem, _load(path)["files"]) for path in found[:limit]]


def _state_file(home: Path, session: str) -> Path:
    # Claude Code's session ids are UUIDs; anything else is made a safe name (hashlib costs
    # the prompt hook, which reads this, a noticeable share of its start-up).
    name = _UNSAFE.sub("_", session)[:120] or "none"
    return home / FOLDER / f"{name}.json"


def _load(where: Path) -> dict[str, list[str]]:
    """What the session was told so far: files answered, memories shown."""
    try:  # json, not orjson: the quick answer (memory.tool_quick) reads this, and orjson's
        # import alone costs it more than the rest
        data = json.loads(read_regular(where, limit=MiB, follow=False))
    except (FileNotFoundError, FileRefused, ValueError, RecursionError):
        return {"files": [], "shown": []}
    if not isinstance(data, dict):
        return {"files": [], "shown": []}
    return {key: [v for v in data.get(key, []) if isinstance(v, str)]
            for key in ("files", "shown")}


def told_files(home: Path, session: str) -> list[str]:
    """The files the session worked on that this hook was told of, latest last."""
    return _load(_state_file(home, session or "none"))["files"]


def indexed_context(
    home: Path, journal: Path, project_id: str, session: str, files: Sequence[str],
    *, tokens: int = TOOL_TOKENS, limit: int = TOOL_LIMIT,
) -> str | None:
    """``tool_context``'s answer from the index of the journal at ``journal`` alone
    (``fallback.file_links``), without the store; None when the index cannot say for sure (or a
    file is a folder, which only a search answers): the caller opens the store."""
    where = _state_file(home, session or "none")
    told = _load(where)
    fresh = [f for f in files if f not in told["files"]]
    if not fresh:
        return ""
    if any(f.endswith("/") for f in fresh):
        return None
    from fallback.file_links import naming

    found = naming(journal, project_id, fresh)
    if found is None:
        return None
    return _tell(where, told, fresh, [memory for named in found for memory in named],
                 tokens, limit)


async def tool_context(
    store: MemoryBackend, project_id: str, home: Path, session: str, files: Sequence[str],
    *, tokens: int = TOOL_TOKENS, limit: int = TOOL_LIMIT, journal: Path | None = None,
) -> str:
    """The memories naming ``files`` that ``session`` was not shown yet, as Markdown within
    ``tokens``; '' when every file was answered before in this session or none is named.
    ``journal``: the folder of the journal ``store`` reads, whose index (brought up to date
    by the store's open) answers as the quick answer does (``indexed_context``); without it
    (a team's server, the graph alone) a search finds the memories naming the files."""
    if journal is not None:
        answer = indexed_context(home, journal, project_id, session, files, tokens=tokens,
                                 limit=limit)
        if answer is not None:
            return answer
    where = _state_file(home, session or "none")
    told = _load(where)
    fresh = [f for f in files if f not in told["files"]]
    if not fresh:
        return ""
    # Imported here: most tool calls end above, and a hook's start-up is its cost.
    from memory.context.file_memories import NAMED, file_memories

    hits = await file_memories(store, fresh, [project_id], areas=False)
    return _tell(where, told, fresh, [hit.episode for hit in hits if hit.score >= NAMED],
                 tokens, limit)


def _tell(where: Path, told: dict[str, list[str]], fresh: Sequence[str],
          found: Sequence[Episode | Stored], tokens: int, limit: int) -> str:
    """The first ``limit`` of the memories ``found`` in force that the session was not shown,
    as Markdown within ``tokens``; noted as shown, with ``fresh`` as answered."""
    from memory.agent.lines import bounded_markdown, describe
    from memory.agent.validity import in_force
    from memory.context.tokens import estimate_tokens

    shown = set(told["shown"])
    kept = {memory.id: f"{memory.kind}: {describe(memory)}" for memory in found
            if memory.id not in shown and in_force(memory)}
    kept = dict(list(kept.items())[:limit])
    told["files"] += fresh
    told["shown"] += kept
    where.parent.mkdir(parents=True, exist_ok=True)
    # In place, not renamed into place and synced (``fallback.disk``, whose import and two
    # fsyncs cost most calls more than the answer): lost or read half-written, it only makes
    # a file be told again.
    overwrite(where, json.dumps(told).encode())
    return bounded_markdown("From this project's memory (dualmem)",
                            [(f"About {', '.join(fresh)}", list(kept.values()))], tokens,
                            estimate_tokens)
