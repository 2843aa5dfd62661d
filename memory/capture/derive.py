"""The memories a folded session becomes, deterministically (the kinds and keys below):

    session_insight     the session in Auto-Claude's shape: the task,     claude-session:<id>
                        what was done, files understood and changed,
                        what worked, what failed, recommendations
    codebase_discovery  each project file changed, or read and spoken     <path>
                        of, with what was said of it
    gotcha              each failed check fixed in the session: the       <check and error>
                        error's key line, what changed, the run that
                        then passed
    task_outcome        the first real prompt, files changed, the last    claude-session:<id>
                        checks, commits

A subagent's transcript gives its discoveries and gotchas; its parent's session gives the
insight and the outcome. Bodies carry ``file``, ``files``, ``files_modified``, ``task_id`` and
``command`` fields, from which every layer derives the file, task and command entities linking
the session to what it touched (``backends.search.entities``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from backends import json_read
from backends.insights import Scope, parse_time
from backends.lean_typing import TYPE_CHECKING
from backends.model import Episode, natural_key, now
from memory.agent.records import outcome_id, title
from memory.agent.scopes import CODEBASE_DISCOVERY, GOTCHA, SESSION_INSIGHT, TASK_OUTCOME
from memory.capture.session import Seen, Session
from memory.capture.united import described, united

if TYPE_CHECKING:
    from typing import Any

SOURCE = "capture"
"""who wrote a derived memory: anything else (the agent, a person) wins over it"""
_KIND_NAMES = {"test": "Tests", "typecheck": "The type check", "lint": "The linter",
               "build": "The build", "command": "A command", "tool": "A tool call"}


def session_key(session_id: str) -> str:
    return f"claude-session:{session_id}"


def derive(session: Session, group_id: str, commits: Sequence[dict[str, Any]] = (),
           since: Seen | None = None) -> list[Episode]:
    """The derived memories of ``session`` in ``group_id``; ``commits`` are the project's git
    commits in the session's time range (``{"hash", "subject", "files"}``), when known. With
    ``since`` (the session when its memories were last derived), only those its new lines
    changed: a file's discovery changes with the file's notes or state, a gotcha only with a
    new fix (a fix never changes), the insight and outcome with anything."""
    if since is not None and since.shared != (session.session_id, session.first_prompt,
                                              session.started):
        since = None  # what every memory says changed
    scope = Scope(group_id, None, SOURCE)
    when = parse_time(session.started) or now()
    found: list[Episode] = []
    for path, known in session.files.items():
        if (known["changed"] or known["notes"]) and (since is None or since.files.get(path) != (
                known["changed"], len(known["notes"]))):
            found.append(_discovery(scope, session, path, known, when))
    found += _gotchas(scope, session, session.fixed[since.fixed if since else 0:], when)
    if session.session_id and not session.subagent and (session.prompts or session.files):
        found.append(_insight(scope, session, commits, when))
        found.append(_outcome(scope, session, commits, when))
    return found


def changed_files(session: Session) -> list[str]:
    return [path for path, known in session.files.items() if known["changed"]]


def _discovery(scope: Scope, session: Session, path: str, known: dict[str, Any],
               when: datetime) -> Episode:
    notes = list(known["notes"])
    description = described(notes) or (
        f"changed for: {title(session.first_prompt, 200)}" if session.first_prompt
        else "changed in a Claude Code session")
    body = {"file": path, "description": description, "notes": notes,
            "changed": bool(known["changed"]), "sessions": [session.session_id]}
    return scope.episode(CODEBASE_DISCOVERY, path, path, _text(body), when)


def _gotchas(scope: Scope, session: Session, fixes: Sequence[dict[str, Any]], when: datetime
             ) -> list[Episode]:
    """One gotcha per key: fixes of the same check and error (one failure met twice) laid one
    over the other in order, as a later Stop lays a new fix over the stored gotcha
    (``keep.laid_over``), so any sequence of Stops keeps what one pass keeps."""
    found: dict[str, Episode] = {}
    for fixed in fixes:
        episode = _gotcha(scope, session, fixed, when)
        earlier = found.get(episode.id)
        found[episode.id] = episode if earlier is None else united(earlier, episode)
    return list(found.values())


def _gotcha(scope: Scope, session: Session, fixed: dict[str, Any], when: datetime) -> Episode:
    what = _KIND_NAMES.get(fixed["kind"], "A check")
    changed = ", ".join(fixed["changed"][:6])
    how = f"changed {changed}" if changed else "ran " + "; ".join(f"`{c}`" for c in fixed["ran"])
    fix = (f"`{fixed['fixed_by']}` instead" if fixed["kind"] == "tool"
           else f"{how}; then `{fixed['fixed_by']}` passed")
    text = f"{what} failed: {fixed['error']}"
    body = {"gotcha": text, "error": fixed["error"], "command": fixed["command"],
            "fix": fix, "files": fixed["changed"],
            "sessions": [session.session_id]}
    key = natural_key(f"{fixed['kind']} {fixed['error']}")
    return scope.episode(GOTCHA, key, text, _text(body), parse_time(fixed["at"]) or when)


def _insight(scope: Scope, session: Session, commits: Sequence[dict[str, Any]],
             when: datetime) -> Episode:
    changed = changed_files(session)
    understood = {path: described(known["notes"]) for path, known in session.files.items()
                  if known["notes"]}
    subjects = [c["subject"] for c in commits] or session.commits
    worked = [f"`{f['fixed_by']}` instead of `{f['command']}`" if f["kind"] == "tool"
              else f"`{f['fixed_by']}` passed after {_fix(f)}" for f in session.fixed]
    worked += [f"`{run['command']}`: {run['summary'] or 'passed'}"
               for run in session.checks.values() if run["passed"]]
    worked += [f"commit: {subject}" for subject in subjects]
    failed = [f"`{f['command']}`: {f['error']}" for f in session.fixed]
    failed += [f"`{f['command']}`: {f['error']}" for f in session.failing.values()]
    body = {
        "session_id": session.session_id,
        "timestamp": session.started,
        "ended": session.ended,
        "task": session.first_prompt,
        "summary": session.last_reply,
        "subtasks_completed": [],
        "discoveries": {
            "files_understood": understood,
            "files_changed": changed,
            "gotchas_encountered": [f"{f['error']} (fixed: {_fix(f)})" for f in session.fixed],
            "patterns_found": list(session.lessons["patterns"]),
        },
        "what_worked": worked,
        "what_failed": failed,
        "recommendations_for_next_session": [
            f"`{f['command']}` still fails: {f['error']}" for f in session.failing.values()
            if f["kind"] != "tool"],
        "compactions": session.compactions,
    }
    name = f"Session {session.session_id[:8]}: {title(session.first_prompt or 'no prompt', 100)}"
    return scope.episode(SESSION_INSIGHT, session_key(session.session_id), name, _text(body),
                         when)


def _outcome(scope: Scope, session: Session, commits: Sequence[dict[str, Any]],
             when: datetime) -> Episode:
    checks = session.checks
    success = not session.failing and all(run["passed"] for run in checks.values())
    last = checks.get("test")
    verdict = (last["summary"] or ("passed" if last["passed"] else "failed")) if last else ""
    tests = f"; tests: `{last['command']}` {verdict}" if last else ""
    changed = changed_files(session)
    key = session_key(session.session_id)
    started, ended = parse_time(session.started), parse_time(session.ended)
    # The body of memory.agent.outcomes.TaskOutcome, built without pydantic (a Stop's import).
    record: dict[str, Any] = {
        "id": outcome_id(scope.id(TASK_OUTCOME, key)), "task_id": key, "success": success,
        "outcome": f"{len(changed)} files changed{tests}",
        "description": title(session.first_prompt or "no prompt", 300),
        "task_type": None, "complexity": None, "turns": None, "session": None,
        "metadata": {"files_modified": changed, "checks": checks,
                     "commits": list(commits) or [{"subject": s} for s in session.commits],
                     "session_id": session.session_id},
    }
    if started and ended:
        record |= {"started_at": session.started, "completed_at": session.ended,
                   "duration_minutes": int((ended - started).total_seconds() // 60)}
    verdict = "succeeded" if success else "failed"
    name = f"{record['id']} {key} {verdict}: {record['description']}"
    return scope.episode(TASK_OUTCOME, key, name, _text(record), when)


def _text(body: dict[str, Any]) -> str:
    """A derived body as JSON text: it holds text, whole numbers, booleans, lists and objects,
    which the standard library writes as orjson does (``tests/test_json_read.py``), without
    orjson's import (a quarter of a later Stop)."""
    return json_read.dumps(body)


def _fix(fixed: dict[str, Any]) -> str:
    if fixed["kind"] == "tool":
        return f"`{fixed['fixed_by']}` instead"
    changed = ", ".join(fixed["changed"][:6])
    return f"changing {changed}" if changed else "running " + "; ".join(fixed["ran"])
