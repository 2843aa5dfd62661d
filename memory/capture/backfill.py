"""Where past sessions are: Claude Code keeps a project's transcripts in
``~/.claude/projects/<the project's path, every character but letters and digits made '-'>/``,
one ``<session id>.jsonl`` per session, its subagents' in ``<session id>/subagents/`` (older
releases: ``agent-<id>.jsonl`` beside the sessions)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from backends.errors import DualmemError


class NoTranscripts(DualmemError):
    """Claude Code holds no transcripts for the project (and none were named)."""


def claude_folder(project: Path, user_home: Path) -> Path:
    """Claude Code's folder of ``project``'s transcripts."""
    return user_home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-",
                                                       os.path.abspath(project))


def transcripts(paths: Iterable[Path]) -> list[Path]:
    """The transcripts named by ``paths`` (files, or folders laid out as Claude Code's), each
    once: a folder's sessions oldest first, each followed by its subagents'."""
    found: list[Path] = []
    for path in paths:
        if not path.is_dir():
            found.append(path)
            continue
        sessions = sorted((p for p in path.glob("*.jsonl") if not p.is_dir()),
                          key=lambda p: (_mtime(p), p.name))
        for session in sessions:
            found.append(session)
            found += sorted((session.with_suffix("") / "subagents").glob("*.jsonl"))
    unique: dict[str, Path] = {}
    for path in found:
        unique.setdefault(os.path.abspath(path), path)
    return list(unique.values())


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
