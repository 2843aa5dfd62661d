"""The memory an agent calls between sessions: insights, patterns, gotchas, files, outcomes.

One rich session insight (Auto-Claude's shape) is split into focused episodes, so a search
finds the one gotcha that matters rather than a whole session:

    session_insight   the session as given           key session-NNN
    pattern, gotcha   one per item                   key: the folded text
    codebase_discovery one per file                  key: the path
    task_outcome      what the session achieved      key session-NNN

Keys are the Auto-Claude importer's, so saving again (or importing the same folder) updates
instead of duplicating. Memories are project-wide by default; with ``spec`` they go to the
spec's group, and reads by search also see the project's group.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from backends.errors import InvalidEpisode
from backends.model import Episode, natural_key, now, stable_id
from backends.protocol import MemoryBackend
from memory.markdown import bounded_markdown, describe
from memory.records import json_object, parse, title
from memory.scopes import (
    ADR,
    CODEBASE_DISCOVERY,
    FAILED_APPROACH,
    GOTCHA,
    PATTERN,
    SESSION_INSIGHT,
    TASK_OUTCOME,
    project_group,
)
from migrate.auto_claude import SESSION_FILE, item_text, session_key
from seeds import put_if_changed

DEFAULT_CONTEXT_CHARS = 4000
_CONTEXT_ITEMS = 5


class TaskOutcome(BaseModel):
    """How a task went. Also reads the importer's ``{"subtask", "session", "outcome"}``."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    task_id: str = ""
    success: bool
    outcome: str = ""
    description: str = ""
    task_type: str | None = None
    complexity: int | None = None
    turns: int | None = None
    session: int | None = None
    metadata: dict[str, Any] = {}

    @model_validator(mode="before")
    @classmethod
    def _imported(cls, data: Any) -> Any:
        if isinstance(data, dict) and "success" not in data and "subtask" in data:
            label = item_text(data["subtask"], "id", "subtask_id", "description", "title")
            return {**data, "task_id": label, "success": data.get("outcome") == "completed"}
        return data


@dataclass(frozen=True)
class SimilarOutcome:
    outcome: TaskOutcome
    score: float
    recorded_at: datetime


def session_from_json(
    text: str, *, file_name: str = "", session_num: int | None = None
) -> tuple[int, dict[str, Any]]:
    """An Auto-Claude session file (``session_NNN.json``) as ``(number, insights)``; the number
    is ``session_num``, else the file's ``session_number``, else the one in its name."""
    insights = json_object(text, file_name or "session file")
    named = SESSION_FILE.search(file_name)
    number = session_num if session_num is not None else insights.get("session_number")
    if number is None and named:
        number = int(named.group(1))
    if not isinstance(number, int):
        raise InvalidEpisode(f"{file_name or 'session file'}: no session number; give one")
    return number, insights


class AgentMemory:
    """The agent-facing memory of one project (of one of its specs, when ``spec`` is given)."""

    def __init__(
        self, store: MemoryBackend, project_id: str, spec: str | None = None, *,
        source: str = "agent",
    ) -> None:
        self.store = store
        self.project_id = project_id
        self.spec = spec
        self.group = project_group(project_id, spec)
        # A spec's memory also finds what the whole project learned.
        self.read_groups = [self.group] if spec is None else [self.group, project_group(project_id)]
        self.source = source

    async def _put(self, kind: str, key: str, name: str, body: Any, **fields: Any) -> Episode:
        episode = Episode.create(
            group_id=self.group, kind=kind, name=title(name), body=body, key=key,
            source=self.source, **fields,
        )
        return (await put_if_changed(self.store, episode))[1]

    async def _put_text(self, kind: str, item: str | Mapping[str, Any]) -> Episode:
        text = item_text(item, kind, "text", "description", "content")
        if not natural_key(text):
            raise InvalidEpisode(f"a {kind} needs some text")
        body = dict(item) if isinstance(item, Mapping) else text
        return await self._put(kind, natural_key(text), text, body)

    async def add_pattern(self, pattern: str | Mapping[str, Any]) -> Episode:
        """A pattern (text, or ``{"pattern": ..., ...}``); the same text again is one memory."""
        return await self._put_text(PATTERN, pattern)

    async def add_gotcha(self, gotcha: str | Mapping[str, Any]) -> Episode:
        """A gotcha (text, or ``{"gotcha": ..., ...}``); the same text again is one memory."""
        return await self._put_text(GOTCHA, gotcha)

    async def add_codebase_discoveries(
        self, discoveries: Mapping[str, Any] | Iterable[Mapping[str, Any]]
    ) -> list[Episode]:
        """What files are for: ``{path: description}`` or ``[{"path": ..., ...}]``; one memory
        per path."""
        items: list[Mapping[str, Any]]
        if isinstance(discoveries, Mapping):
            items = [
                {"path": path, **(about if isinstance(about, Mapping) else {"description": about})}
                for path, about in discoveries.items()
            ]
        else:
            items = list(discoveries)
        saved = []
        for item in items:
            path = item_text(item, "path", "file", "file_path")
            about = item.get("description", item.get("purpose", ""))
            body = {"file": path, "description": about} | {
                k: v for k, v in item.items() if k not in ("path", "file", "file_path", "purpose")
            }
            saved.append(await self._put(CODEBASE_DISCOVERY, path, path, body))
        return saved

    async def add_task_outcome(
        self,
        task_id: str,
        success: bool,
        outcome: str,
        *,
        description: str = "",
        task_type: str | None = None,
        complexity: int | None = None,
        turns: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Episode:
        """How task ``task_id`` went; recording it again replaces the earlier outcome."""
        record = TaskOutcome(
            task_id=task_id, success=success, outcome=outcome, description=description,
            task_type=task_type, complexity=complexity, turns=turns, metadata=dict(metadata or {}),
        )
        return await self._put_outcome(task_id, record)

    async def _put_outcome(self, key: str, record: TaskOutcome) -> Episode:
        mark = "succeeded" if record.success else "failed"
        name = f"{record.task_id} {mark}: {record.description or record.outcome}"
        return await self._put(TASK_OUTCOME, key, name, record.model_dump(mode="json"))

    async def save_session_insights(
        self, session_num: int, insights: Mapping[str, Any]
    ) -> list[Episode]:
        """Save one session's insights (Auto-Claude shape: ``subtasks_completed``,
        ``discoveries{files_understood, patterns_found, gotchas_encountered}``, ``what_worked``,
        ``what_failed``, ``recommendations_for_next_session``) as focused episodes; returns them,
        the session insight first. Saving the same session again adds nothing."""
        if session_num < 0:
            raise InvalidEpisode(f"session number must be 0 or more, not {session_num}")
        discoveries = insights.get("discoveries") or {}
        key = session_key(session_num)
        # Without a timestamp of its own, a session keeps the one it was first saved with, so
        # saving it again rewrites nothing.
        earlier = await self.store.get(stable_id(self.group, SESSION_INSIGHT, key))
        data = earlier.data if earlier is not None else None
        stamp = data.get("timestamp") if isinstance(data, dict) else None
        body = {"timestamp": stamp or now().isoformat(), **insights, "session_number": session_num}
        saved = [await self._put(SESSION_INSIGHT, key, f"Session {session_num} insights", body)]
        # Auto-Claude wrote *_discovered in older versions.
        patterns = discoveries.get("patterns_found") or discoveries.get("patterns_discovered")
        gotchas = discoveries.get("gotchas_encountered") or discoveries.get("gotchas_discovered")
        saved += [await self.add_pattern(item) for item in patterns or []]
        saved += [await self.add_gotcha(item) for item in gotchas or []]
        if discoveries.get("files_understood"):
            saved += await self.add_codebase_discoveries(discoveries["files_understood"])
        worked, failed = insights.get("what_worked") or [], insights.get("what_failed") or []
        completed = insights.get("subtasks_completed") or []
        subtasks = [item_text(item, "id", "description") for item in completed]
        outcome = TaskOutcome(
            task_id=str(insights.get("task_id") or self.spec or key),
            success=not failed,
            outcome="; ".join(item_text(i) for i in [*worked, *failed]) or "no outcome noted",
            description=str(insights.get("task_description") or ", ".join(subtasks)),
            session=session_num,
            metadata={"subtasks_completed": subtasks},
        )
        saved.append(await self._put_outcome(key, outcome))
        return saved

    async def get_session_history(self, limit: int = 5) -> list[dict[str, Any]]:
        """The last ``limit`` session insights, newest (highest session number) first; exact."""
        sessions = []
        async for episode in self.store.scan(group_ids=[self.group], kinds=[SESSION_INSIGHT]):
            data = episode.data
            if isinstance(data, dict):
                number = data.get("session_number")
                order = number if isinstance(number, int) else -1
                sessions.append((order, episode.created_at, data))
        sessions.sort(key=lambda s: (s[0], s[1]), reverse=True)
        return [data for _, _, data in sessions[: max(limit, 0)]]

    async def get_similar_task_outcomes(
        self, description: str, limit: int = 5
    ) -> list[SimilarOutcome]:
        """Outcomes of tasks like ``description``, best match first, with the search score."""
        hits = await self.store.search(
            description, group_ids=self.read_groups, kinds=[TASK_OUTCOME], limit=limit
        )
        found = []
        for hit in hits:
            record = parse(hit.episode, TaskOutcome)
            if record is not None:
                found.append(SimilarOutcome(record, hit.score, hit.episode.created_at))
        return found

    async def get_context_for_session(
        self, task: str, *, max_chars: int = DEFAULT_CONTEXT_CHARS
    ) -> str:
        """A Markdown block for an agent starting ``task``: relevant patterns, gotchas and
        failed approaches, decisions in force, files, similar outcomes, and recent sessions.
        Never longer than ``max_chars``; empty when memory holds nothing relevant."""
        sections = [
            ("Patterns", [PATTERN]),
            ("Gotchas and failed approaches", [GOTCHA, FAILED_APPROACH]),
            ("Decisions in force", [ADR]),
            ("Files", [CODEBASE_DISCOVERY]),
            ("Similar past tasks", [TASK_OUTCOME]),
        ]
        results = await asyncio.gather(*(
            self.store.search(task, group_ids=self.read_groups, kinds=kinds, limit=_CONTEXT_ITEMS)
            for _, kinds in sections
        ))
        blocks = [
            (heading, [describe(hit.episode) for hit in hits if hit.episode.invalid_at is None])
            for (heading, _), hits in zip(sections, results, strict=True)
        ]
        blocks.append(("Recent sessions", [
            session_line(data) for data in await self.get_session_history(3)
        ]))
        return bounded_markdown("Memory for this task", blocks, max_chars)


def session_line(data: Mapping[str, Any]) -> str:
    """A session insight in one line: its number, what worked, failed, and comes next."""
    parts = [f"Session {data.get('session_number', '?')}"]
    for label, field in (("worked", "what_worked"), ("failed", "what_failed"),
                         ("next", "recommendations_for_next_session")):
        items = [item_text(item) for item in data.get(field) or []]
        if items:
            parts.append(f"{label}: {'; '.join(items)}")
    return " | ".join(parts)
