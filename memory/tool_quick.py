"""PostToolUse's answers, given before the command line is imported: Claude Code runs
``dualmem hook post-tool-use`` after every matched tool call. Most calls name no project file
(``Bash ls``) or only files this session was told of already (``memory.tool_hook``'s note in
the home): those are answered ``{}``. A call naming a file the session has not touched is
answered from the journal's index (``memory.tool_hook.indexed_context``), as the whole way
answers it once its store's open has brought that index up to date. ``dualmem``'s entry point
(``memory.entry``) asks ``quick_answer`` and prints what it returns, without the command line,
the event loop and the store, which cost many times the answer itself; the rules (which files
a call names, what the session was told, where the home is) are the whole way's own functions.

Anything else goes the whole way, which answers it or says what is wrong as usual: another
command, an option this does not know, a home that is not there or has settings (a team's
server, which the journal does not speak for), ``--backend graph``, an index that does not
agree with the files, input that is not a PostToolUse document."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from memory.capture.quick import found_home, hook_input

EVENT = "post-tool-use"
JOURNAL_BACKENDS = frozenset({"file", "auto"})
"""where a one-shot process reads the journal alone (``memory.store.selection``)"""
_GROUP = re.compile(r"[A-Za-z0-9_-]{1,128}")


def quick_answer(argv: Sequence[str], stdin: Callable[[], bytes],
                 env: dict[str, str]) -> str | None:
    """The document ``argv`` prints when it is the tool hook and this can answer it; None for
    the whole way. The hook's input is read (``stdin()``) only for that hook, and put back
    for the whole way (``sys.stdin``)."""
    hooked = hook_input(argv, stdin, env, (EVENT,))
    if hooked is None:
        return None
    named, given = hooked
    session, cwd = given.get("session_id", ""), given.get("cwd")
    tool, tool_input = given.get("tool_name", ""), given.get("tool_input")
    if not (isinstance(session, str) and isinstance(tool, str)
            and (cwd is None or isinstance(cwd, str))
            and (tool_input is None or isinstance(tool_input, dict))):
        return None
    # Imported here: the entry point imports this module for every command.
    from memory.hook_document import hook_output
    from memory.store.home import project_folder
    from memory.tool_hook import indexed_context, told_files, tool_files

    # An answer here only saves time: whatever it cannot decide (a path the file system
    # refuses, say) the whole way decides, and reports.
    try:
        found = found_home(named, cwd or None, env)
        if found is None:
            return None
        home = Path(found)
        files = tool_files(tool, tool_input or {}, Path(project_folder(home, cwd or None)))
        if not files or set(files) <= set(told_files(home, session)):
            return "{}"
        project = _journal_project(argv, home, env)
        if project is None:
            return None
        told = indexed_context(home, home / "files", project, session, files)
    except Exception:
        return None
    if told is None:
        return None
    return json.dumps(hook_output("PostToolUse", told), ensure_ascii=False,
                      separators=(",", ":"))


def _journal_project(argv: Sequence[str], home: Path, env: dict[str, str]) -> str | None:
    """The project's id when the whole way would read the journal alone (``file`` or ``auto``,
    no team server, no settings) and the home records a plain one; None otherwise."""
    from backends.safe_files import read_regular

    backend = env.get("DUALMEM_BACKEND") or "auto"
    for at, given in enumerate(argv):
        if given.startswith("--backend="):
            backend = given.partition("=")[2]
        elif given == "--backend" and at + 1 < len(argv):
            backend = argv[at + 1]
    if (backend not in JOURNAL_BACKENDS or env.get("DUALMEM_GRAPH_URL")
            or (home / "config.json").exists()):
        return None
    # json, as memory.store.project reads it; anything unusual goes the whole way, which says so
    recorded = json.loads(read_regular(home / "project.json", limit=1 << 16, follow=False))
    project = recorded.get("project_id") if isinstance(recorded, dict) else None
    return project if isinstance(project, str) and _GROUP.fullmatch(project) else None
