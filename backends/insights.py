"""Auto-Claude's memory items as focused memories: the one splitter behind the Auto-Claude
importer and the agent API (``AgentMemory.save_session_insights``, ``dualmem session save``),
so a session file saved by either is the same memories under the same ids.

What one session insight becomes, in any of Auto-Claude's shapes (its ``memory`` package's, its
insight extractor's, or both mixed), with each memory's natural key:

    session_insight     the session as given, plus its number          session-NNN
    task_outcome        each subtask: ``subtasks_completed`` (success),  <subtask id>
                        ``discoveries.subtask_id`` with ``success``
                        each ``what_worked`` item (success)            worked:<folded text>
                        ``discoveries.approach_outcome``               approach:session-NNN
    failed_approach     each ``what_failed`` item                      <folded text>
    codebase_discovery  each file of ``files_understood`` ({path:      <path>
                        purpose} or a list) and ``file_insights[]``
    pattern             ``patterns_found``, ``patterns_discovered[]``  <folded text>
    gotcha              ``gotchas_encountered``, ``gotchas_discovered[]``,   <folded text>
                        each ``file_insights[].gotchas`` item
    recommendation      ``recommendations_for_next_session``,          <folded text>
                        ``discoveries.recommendations``

The folded text is ``natural_key``: case, spacing and punctuation do not make a new memory.

**Identity and specs.** A ``Scope`` names the group, the spec and the writer. Every spec's
memories live in the project's group, so whatever reads the project (context, search) sees every
spec. With a spec, every key is ``<spec>/<key>`` (Auto-Claude numbers every spec's sessions from 1
and its subtasks from ``subtask-1-1``: the same number in two specs is two memories) and every
body is a JSON object carrying ``"spec": <name>``, which is how one spec's memories are asked for.
Without a spec (the project's own memory) keys and bodies are as given, so a pattern typed into
the file layer's ``patterns.md`` is the same memory as one saved through the API.

**Mentions.** One memory may be mentioned many times: a pattern in two sessions and in
``patterns.md``, a file in the codebase map and in a session. ``merge`` makes one memory of
them, in time order: a later mention's JSON fields update the earlier ones, and the memory keeps
the earliest time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime

from backends.kinds import (
    CODEBASE_DISCOVERY,
    FAILED_APPROACH,
    GOTCHA,
    PATTERN,
    RECOMMENDATION,
    SESSION_INSIGHT,
    TASK_OUTCOME,
)
from backends.lean_typing import TYPE_CHECKING, NamedTuple
from backends.model import MAX_NAME_CHARS, Episode, natural_key, stable_id, utc
from backends.patterns import lazy
from backends.texts import item_text as item_text  # where others read it

if TYPE_CHECKING:
    from typing import Any

SESSION_FILE = lazy(r"session_(\d+)\.json$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")
_PATH_KEYS = ("path", "file", "file_path")


class Scope(NamedTuple):
    """Where split memories go: the ``group_id`` (the project's), the ``spec`` they belong to
    (None: the project itself) and the ``source`` that writes them."""

    group_id: str
    spec: str | None = None
    source: str = "migration"

    def key(self, key: str) -> str:
        return key if self.spec is None else f"{self.spec}/{key}"

    def episode(self, kind: str, key: str, name: str, body: Any, when: datetime) -> Episode:
        """The memory of ``kind`` with natural ``key`` (scoped to the spec), named after the first
        line of ``name``, dated ``when``. Raises ``InvalidEpisode`` when it cannot be one."""
        if self.spec is not None:
            fields = dict(body) if isinstance(body, Mapping) else {kind: body}
            body = {**fields, "spec": self.spec}
        return Episode.create(
            group_id=self.group_id, kind=kind, key=self.key(key), name=_name(name, kind),
            body=body, source=self.source, created_at=when,
        )

    def id(self, kind: str, key: str) -> str:
        """The id of the memory of ``kind`` with natural ``key`` in this scope."""
        return stable_id(self.group_id, kind, self.key(key))

    def mine(self, episode: Episode) -> bool:
        """True when ``episode`` belongs to this scope's spec (any memory, without a spec)."""
        data = episode.data
        return self.spec is None or (isinstance(data, dict) and data.get("spec") == self.spec)


def split_session(
    scope: Scope, number: int, insights: Mapping[str, Any], when: datetime
) -> list[Episode]:
    """Session ``number``'s insights as focused memories (see the module docstring), dated
    ``when`` (the session's ``timestamp`` when the caller has one), one per id, the session
    insight first. Items of unknown shapes are read with ``item_text``; empty items are skipped."""
    discoveries = _mapping(insights.get("discoveries"))
    session = {"timestamp": when.isoformat(), **insights, "session_number": number}
    title = f"Session {number} insights"
    found: list[Episode | None] = [
        scope.episode(SESSION_INSIGHT, session_key(number), title, session, when)
    ]
    found += _outcomes(scope, number, insights, discoveries, when)
    files = [*file_items(discoveries.get("files_understood")),
             *file_items(discoveries.get("file_insights"))]
    for item in files:
        found.append(file_discovery(scope, item, when))
        path = _path(item)
        for gotcha in _items(item.get("gotchas")):
            detail = {"gotcha": gotcha, "file": path} if isinstance(gotcha, str) else gotcha
            found.append(insight(scope, GOTCHA, detail, when))
    for kind, field in ((PATTERN, "patterns_found"), (PATTERN, "patterns_discovered"),
                        (GOTCHA, "gotchas_encountered"), (GOTCHA, "gotchas_discovered")):
        for item in _items(discoveries.get(field)):
            found.append(insight(scope, kind, item, when))
    for item in _items(insights.get("what_failed")):
        text = item_text(item, "approach", "text", "description")
        body = {"approach": text, "symptom": f"failed in session {number}", "severity": "medium",
                "occurrence_count": 1, "session": number}
        found += _keyed(scope, FAILED_APPROACH, "", text, f"Failed: {text}", body, when)
    for item in [*_items(insights.get("recommendations_for_next_session")),
                 *_items(discoveries.get("recommendations"))]:
        text = item_text(item, RECOMMENDATION, "text", "description")
        body = {RECOMMENDATION: text, "session": number}
        found += _keyed(scope, RECOMMENDATION, "", text, text, body, when)
    return fold(episode for episode in found if episode is not None)


def file_discovery(scope: Scope, item: Mapping[str, Any], when: datetime) -> Episode:
    """What a file is for, from ``{"path": ..., "description" | "purpose": ..., ...}`` (one of
    ``file_items``; any other fields are kept), keyed by its path."""
    path = _path(item)
    fields = {k: v for k, v in item.items() if k not in _PATH_KEYS}
    if "description" not in fields and "purpose" in fields:
        fields["description"] = fields.pop("purpose")
    description = fields.pop("description", "")
    return scope.episode(CODEBASE_DISCOVERY, path, path,
                         {"file": path, "description": description, **fields}, when)


def insight(scope: Scope, kind: str, item: Any, when: datetime) -> Episode | None:
    """A pattern or a gotcha (text, or a mapping such as ``{"pattern", "applies_to", ...}``),
    keyed by its folded text; None for an item without text."""
    text = item_text(item, kind, "text", "description", "content")
    body = dict(item) if isinstance(item, Mapping) else text
    found = _keyed(scope, kind, "", text, text, body, when)
    return found[0] if found else None


def _keyed(
    scope: Scope, kind: str, prefix: str, text: str, name: str, body: Any, when: datetime
) -> list[Episode]:
    """The memory keyed ``prefix`` + the folded ``text``; none when the text folds to nothing."""
    key = natural_key(text)
    return [scope.episode(kind, prefix + key, name, body, when)] if key else []


def _outcomes(
    scope: Scope, number: int, insights: Mapping[str, Any], discoveries: Mapping[str, Any],
    when: datetime,
) -> list[Episode]:
    """The session's task outcomes: its subtasks, what worked, and the approach's outcome."""
    subtasks: list[tuple[str, bool, Any]] = [
        (item_text(item, "id", "subtask_id", "description", "title"), True, item)
        for item in _items(insights.get("subtasks_completed"))
    ]
    current, success = discoveries.get("subtask_id"), discoveries.get("success")
    if isinstance(current, str) and current.strip() and isinstance(success, bool):
        subtasks.append((current.strip(), success, current))
    found = []
    for label, ok, item in subtasks:
        if not label:
            continue
        verdict = "succeeded" if ok else "failed"
        about = item.get("description", "") if isinstance(item, Mapping) else ""
        body = {"task_id": label, "success": ok, "description": about,
                "outcome": f"{'completed' if ok else 'not completed'} in session {number}",
                "session": number}
        found.append(scope.episode(TASK_OUTCOME, label, f"{label} {verdict}", body, when))
    task = current if isinstance(current, str) and current.strip() else (
        ", ".join(label for label, ok, _ in subtasks if ok) or session_key(number))
    for item in _items(insights.get("what_worked")):
        text = item_text(item, "text", "description")
        body = {"task_id": task, "success": True, "outcome": text, "session": number}
        found += _keyed(scope, TASK_OUTCOME, "worked:", text, f"Worked: {text}", body, when)
    approach = _mapping(discoveries.get("approach_outcome"))
    if isinstance(approach.get("success"), bool):
        ok = approach["success"]
        used = item_text(approach.get("approach_used") or "")
        why = approach.get("why_it_worked" if ok else "why_it_failed")
        tried = _items(approach.get("alternatives_tried"))
        body = {"task_id": task, "success": ok, "description": used,
                "outcome": item_text(why) if why else ("worked" if ok else "failed"),
                "session": number, "metadata": {"alternatives_tried": tried}}
        name = f"Approach {'worked' if ok else 'failed'}: {used or session_key(number)}"
        found.append(scope.episode(TASK_OUTCOME, f"approach:{session_key(number)}", name, body,
                                   when))
    return found


def file_items(files: Any) -> list[Mapping[str, Any]]:
    """Files as a list of ``{"path": ..., ...}``, from ``{path: description}``, ``{path:
    {"description": ..., ...}}``, or a list of mappings or paths; items without a path are
    left out."""
    items: list[Any] = (
        [{"path": path, **(about if isinstance(about, Mapping) else {"description": about})}
         for path, about in files.items()]
        if isinstance(files, Mapping)
        else [{"path": item} if isinstance(item, str) else item for item in _items(files)]
    )
    return [item for item in items if isinstance(item, Mapping) and _path(item)]


def _path(item: Mapping[str, Any]) -> str:
    return next((v.strip() for k in _PATH_KEYS if isinstance(v := item.get(k), str)), "")


def merge(earlier: Episode, later: Episode) -> Episode:
    """One memory of two mentions of it (the same id): ``later``'s fields, its JSON body laid over
    ``earlier``'s (field by field), and the earlier time."""
    import orjson  # a write's: reads need not load it

    old, new = earlier.data, later.data
    body = orjson.dumps({**old, **new}).decode() if isinstance(old, dict) and isinstance(
        new, dict) else later.body
    return later.model_copy(
        update={"body": body, "created_at": min(earlier.created_at, later.created_at)}
    )


def fold(mentions: Iterable[Episode]) -> list[Episode]:
    """Every memory of ``mentions`` once, in the order first met, its mentions merged in time
    order (mentions of the same time in the order given)."""
    by_id: dict[str, list[Episode]] = {}
    for episode in mentions:
        by_id.setdefault(episode.id, []).append(episode)
    merged = []
    for same in by_id.values():
        ordered = sorted(same, key=lambda e: e.created_at)
        memory = ordered[0]
        for mention in ordered[1:]:
            memory = merge(memory, mention)
        merged.append(memory)
    return merged


def session_key(number: int) -> str:
    """The natural key of a session's insight."""
    return f"session-{number:03d}"


def session_number(insights: Mapping[str, Any], file_name: str = "") -> int | None:
    """A session file's number: its ``session_number``, else the one in its name
    (``session_NNN.json``), else None."""
    number = insights.get("session_number")
    if isinstance(number, int) and not isinstance(number, bool):
        return number
    named = SESSION_FILE().search(file_name)
    return int(named.group(1)) if named else None


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 time (``Z`` allowed; naive means UTC) as an aware UTC datetime, else None."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return utc(datetime.fromisoformat(value.strip().replace("Z", "+00:00")))
    except ValueError:
        return None


def _name(text: str, kind: str) -> str:
    line = " ".join(_CONTROL.sub(" ", text.strip().split("\n", 1)[0]).split())
    return line[:MAX_NAME_CHARS] or kind


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(value: Any) -> list[Any]:
    """A list field as a list: a lone item is a list of one; nothing is an empty list."""
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]
