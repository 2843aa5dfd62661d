"""A capturing hook's commonest answer, given before anything heavy is imported: Stop fires
after every turn, and when the transcript (and its subagents') gained nothing since its cursor,
there is nothing to read, fold or write. ``dualmem``'s entry point (``memory.entry``) asks
``nothing_new`` first and answers ``{}`` without the command line, the event loop and the
stores, which cost many times the answer itself.

Anything else (another command, an option this does not know, a home that is not there, a
reply holding a lesson, a transcript that grew or changed) goes the whole way, through the
command line, which says what is wrong as usual."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memory.capture.labels import LESSON_LABELS

CAPTURES = ("stop", "session-end", "pre-compact")


def nothing_new(argv: Sequence[str], stdin: Callable[[], bytes], env: dict[str, str]) -> bool:
    """Is ``argv`` a capturing hook whose transcripts gained nothing since their cursors?
    The hook's input is read (``stdin()``) only for such a hook, and put back for the whole
    way (``sys.stdin``)."""
    hooked = hook_input(argv, stdin, env, CAPTURES)
    if hooked is None:
        return False
    home, given = hooked
    transcript, cwd = given.get("transcript_path"), given.get("cwd")
    message = given.get("last_assistant_message") or ""
    if not isinstance(transcript, str) or not transcript or not isinstance(message, str):
        return False
    if any(label in message.casefold() for label in LESSON_LABELS):
        return False  # perhaps a lesson to keep: the whole way decides
    found = found_home(home, cwd if isinstance(cwd, str) and cwd else None, env)
    return found is not None and _all_read(found, Path(transcript))


def hook_input(argv: Sequence[str], stdin: Callable[[], bytes], env: dict[str, str],
               events: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    """The home ``argv`` names ('' when none) and the hook's input, when ``argv`` is a hook of
    ``events`` given a JSON object; None for anything else. The input is read (``stdin()``)
    only for such a hook, and put back for the whole way (``sys.stdin``)."""
    named = _hook_home(argv, env, events)
    if named is None:
        return None
    raw = stdin()
    _put_back(raw)
    try:  # json, not orjson: its import alone costs more than this whole answer
        given = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return (named, given) if isinstance(given, dict) else None


def _hook_home(argv: Sequence[str], env: dict[str, str], events: Sequence[str]) -> str | None:
    """The home ``argv`` names ('' when none) if it is ``[--home H] [--backend B] hook EVENT``
    for one of ``events``; None for anything else."""
    named = ""
    rest = list(argv)
    while rest and rest[0].startswith("--"):
        option, _, value = rest.pop(0).partition("=")
        if not value:
            if not rest:
                return None
            value = rest.pop(0)
        if option == "--home":
            named = value
        elif option != "--backend":
            return None
    if rest[:1] != ["hook"] or len(rest) != 2 or rest[1] not in events:
        return None
    return named or env.get("DUALMEM_HOME", "")


def found_home(named: str, cwd: str | None, env: dict[str, str]) -> Path | None:
    """The memory home the hook would use, when it is a home and safe to read."""
    from backends.errors import DualmemError
    from memory.store.home import check_owner, discover_home, is_home

    if named:
        home = Path(named).expanduser().absolute()
    else:
        found = discover_home(Path(cwd) if cwd else Path.cwd())
        if found is None:
            return None
        try:
            check_owner(found, env.get("DUALMEM_SAFE_HOMES", ""))
        except (DualmemError, OSError):
            return None
        home = found.absolute()
    return home if is_home(home) else None


def _all_read(home: Path, transcript: Path) -> bool:
    from memory.capture import cursor as cursors
    from memory.capture.reading import Budget, read_new, subagent_transcripts

    for path in [transcript, *subagent_transcripts(transcript)]:
        cursor = cursors.load(home, path)
        if not cursor.offset:
            return False
        try:
            chunk = read_new(path, cursor, Budget())
        except OSError:  # refused or gone: the whole way says so
            return False
        if chunk.restarted or chunk.lines or chunk.left or chunk.end != cursor.offset:
            return False
    return True


def _put_back(raw: bytes) -> None:
    import io

    sys.stdin = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")
