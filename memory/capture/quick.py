"""A capturing hook's commonest answers, given before the command line, the event loop and the
stores are imported, which cost many times the answers themselves. Stop fires after every
turn: when the transcript (and its subagents') gained nothing since its cursor, there is
nothing to read, fold or write (``{}``); when it gained a turn, what that changes is most often
appended to the journal by a lean process (``memory.capture.later``). ``dualmem``'s entry
point (``memory.entry``) asks ``answer`` first.

Anything else (another command, an option this does not know, a home that is not there, a
transcript to read from its start, a lesson to keep) goes the whole way, through the command
line, which says what is wrong as usual."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence

from backends.lean_typing import TYPE_CHECKING
from memory.capture.labels import LESSON_LABELS

if TYPE_CHECKING:
    from typing import Any

CAPTURES = ("stop", "session-end", "pre-compact")
LEAN = ("stop", "pre-compact")
"""the captures written lean when they can be: the session goes on (a SessionEnd may start
an LLM's summary, which the whole way does)"""


def answer(argv: Sequence[str], stdin: Callable[[], bytes], env: dict[str, str]) -> str | None:
    """The answer of a capturing hook given before the command line is imported: ``{}`` when
    its transcripts gained nothing since their cursors, what a later Stop kept when it could
    be written lean (``memory.capture.later``); None for the whole way. The hook's input is
    read (``stdin()``) only for a capturing hook, and put back for the whole way."""
    hooked = _capturing(argv, stdin, env)
    if hooked is None:
        return None
    home, transcript, given = hooked
    if not _told_lessons(given) and _all_read(home, transcript):
        return "{}"
    parsed = _hook_argv(argv, LEAN)
    if parsed is None:
        return None
    from memory.capture.later import capture_later

    return capture_later(home, transcript, given, env, backend=parsed[0].get("--backend"),
                         event=parsed[1])


def nothing_new(argv: Sequence[str], stdin: Callable[[], bytes], env: dict[str, str]) -> bool:
    """Is ``argv`` a capturing hook whose transcripts gained nothing since their cursors?
    The hook's input is read (``stdin()``) only for such a hook, and put back for the whole
    way (``sys.stdin``)."""
    hooked = _capturing(argv, stdin, env)
    return hooked is not None and not _told_lessons(hooked[2]) and _all_read(*hooked[:2])


def _capturing(argv: Sequence[str], stdin: Callable[[], bytes], env: dict[str, str]
               ) -> tuple[str, str, dict[str, Any]] | None:
    """The home, the transcript and the input of a capturing hook ``argv`` names, when it has
    them as plain paths (``plain``); None for anything else."""
    hooked = hook_input(argv, stdin, env, CAPTURES)
    if hooked is None:
        return None
    home, given = hooked
    transcript, cwd = given.get("transcript_path"), given.get("cwd")
    message = given.get("last_assistant_message") or ""
    cwd = cwd if isinstance(cwd, str) and cwd else None
    if not (isinstance(transcript, str) and plain(transcript) and (cwd is None or plain(cwd))
            and isinstance(message, str)):
        return None
    found = found_home(home, cwd, env)
    return None if found is None else (found, transcript, given)


def _told_lessons(given: dict[str, Any]) -> bool:
    """Does the reply the hook was given perhaps hold a lesson to keep?"""
    message = given.get("last_assistant_message") or ""
    return any(label in message.casefold() for label in LESSON_LABELS)


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
    parsed = _hook_argv(argv, events)
    if parsed is None:
        return None
    return parsed[0].get("--home") or env.get("DUALMEM_HOME", "")


def _hook_argv(argv: Sequence[str], events: Sequence[str]) -> tuple[dict[str, str], str] | None:
    """The options (``--home``, ``--backend``) and the event of ``argv`` if it is
    ``[--home H] [--backend B] hook EVENT`` for one of ``events``; None for anything else."""
    options = {}
    rest = list(argv)
    while rest and rest[0].startswith("--"):
        option, _, value = rest.pop(0).partition("=")
        if not value:
            if not rest:
                return None
            value = rest.pop(0)
        if option not in ("--home", "--backend"):
            return None
        options[option] = value
    if rest[:1] != ["hook"] or len(rest) != 2 or rest[1] not in events:
        return None
    return options, rest[1]


def found_home(named: str, cwd: str | None, env: dict[str, str]) -> str | None:
    """The memory home the hook would use, when it is a home, safe to read, and named by a
    plain path (``plain``)."""
    from backends.errors import DualmemError
    from memory.store.home import absolute, check_owner, discover_home, is_home

    if named:
        home = absolute(os.path.expanduser(named))
    else:
        found = discover_home(cwd or os.getcwd())
        if found is None:
            return None
        try:
            check_owner(found, env.get("DUALMEM_SAFE_HOMES", ""))
        except (DualmemError, OSError):
            return None
        home = found
    return home if plain(home) and is_home(home) else None


def plain(path: str) -> bool:
    """Is ``path`` absolute and written plainly (no ``..``, ``.``, repeated or trailing
    slash)? The answers here take their paths as text, where ``pathlib``'s import would cost
    a Stop more than its reading: on a plain path, text and ``pathlib`` agree (``parent``,
    ``name``, ``/``, ``str``). Any other goes the whole way."""
    return os.path.isabs(path) and os.path.normpath(path) == path


def _all_read(home: str, transcript: str) -> bool:
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
