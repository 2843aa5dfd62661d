"""The git commits a session made: those of the project's repository in the session's time
range, with the files each touched. Best effort and bounded: no repository, no git, a slow or
failing git is no commit at all."""

from __future__ import annotations

import os
from datetime import timedelta

from backends.child_output import output
from backends.insights import parse_time
from backends.lean_typing import TYPE_CHECKING
from memory.capture.redact import redact

if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

MAX_COMMITS = 20
TIMEOUT = 3.0
_SLACK = timedelta(minutes=2)  # a commit is dated a moment after the transcript's last line


def commits_between(root: StrPath, started: str, ended: str) -> list[dict[str, Any]]:
    """``{"hash", "subject", "files"}`` of the commits in ``root``'s repository dated from
    ``started`` to ``ended`` (ISO times), oldest first."""
    since, until = parse_time(started), parse_time(ended)
    if since is None or until is None or not os.path.exists(os.path.join(root, ".git")):
        return []
    printed = output(
        ["git", "-C", os.fspath(root), "log", f"--since={since.isoformat()}",
         f"--until={(until + _SLACK).isoformat()}", f"--max-count={MAX_COMMITS}",
         "--no-merges", "--format=%x1e%H%x1f%s", "--name-only"], timeout=TIMEOUT)
    if printed is None:
        return []
    found = []
    for record in printed.decode("utf-8", "replace").split("\x1e")[1:]:
        head, _, names = record.partition("\n")
        commit, _, subject = head.partition("\x1f")
        files = [name for name in names.splitlines() if name.strip()][:50]
        found.append({"hash": commit[:12], "subject": redact(subject.strip()[:200]),
                      "files": files})
    return found[::-1]
