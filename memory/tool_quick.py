"""PostToolUse's commonest answer, given before the command line is imported: Claude Code runs
``dualmem hook post-tool-use`` after every matched tool call, and most calls name no project
file (``Bash ls``) or only files this session was told of already (``memory.tool_hook``'s note
in the home). ``dualmem``'s entry point (``memory.entry``) asks ``nothing_to_tell`` and answers
those ``{}`` without the command line, the event loop and the store, which cost many times the
answer itself; the rules (which files a call names, what the session was told, where the home
is) are the whole way's own functions.

Anything else (a fresh file, another command, an option this does not know, a home that is not
there, input that is not a PostToolUse document) goes the whole way, which answers it or says
what is wrong as usual."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from memory.capture.quick import found_home, hook_input

EVENT = "post-tool-use"


def nothing_to_tell(argv: Sequence[str], stdin: Callable[[], bytes], env: dict[str, str]) -> bool:
    """Is ``argv`` the tool hook, for a call that names no project file, or only files its
    session was told of? The hook's input is read (``stdin()``) only for that hook, and put
    back for the whole way (``sys.stdin``)."""
    hooked = hook_input(argv, stdin, env, (EVENT,))
    if hooked is None:
        return False
    named, given = hooked
    session, cwd = given.get("session_id", ""), given.get("cwd")
    tool, tool_input = given.get("tool_name", ""), given.get("tool_input")
    if not (isinstance(session, str) and isinstance(tool, str)
            and (cwd is None or isinstance(cwd, str))
            and (tool_input is None or isinstance(tool_input, dict))):
        return False
    # Imported here: the entry point imports this module for every command.
    from memory.store.home import project_folder
    from memory.tool_hook import told_files, tool_files

    # An answer here only saves time: whatever it cannot decide (a path the file system
    # refuses, say) the whole way decides, and reports.
    try:
        home = found_home(named, cwd or None, env)
        if home is None:
            return False
        files = tool_files(tool, tool_input or {}, project_folder(home, Path(cwd) if cwd else None))
        return not files or set(files) <= set(told_files(home, session))
    except Exception:
        return False
