"""The memory an agent calls between sessions: insights, patterns, gotchas, files, outcomes.

One rich session insight (Auto-Claude's shape) is split into focused memories by the splitter
the Auto-Claude importer uses (``backends.insights``, which lists what becomes what), so that a
search finds the one gotcha that matters rather than a whole session, and saving a session file
is the same memories, under the same ids, as importing the folder that holds it. A memory
written again is updated, never duplicated: the later mention's fields win, the first time stays.

Memories live in the project's group, so the project's context and searches see them all. With
``spec``, they are that spec's: their keys are scoped to it and each body records ``"spec"``
(the importer's rule); ``memories()`` and ``get_session_history()`` then list the spec's own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from backends.errors import InvalidEpisode
from backends.insights import (
    Scope,
    file_discovery,
    file_items,
    insight,
    merge,
    parse_time,
    session_key,
    session_number,
    split_session,
)
from backends.model import Episode, Hit, now, problems
from backends.protocol import MemoryBackend
from memory.agent.markdown import bounded_markdown, describe
from memory.agent.outcomes import TaskOutcome as TaskOutcome  # its earlier home, re-exported
from memory.agent.outcomes import outcome_id
from memory.agent.records import json_object, parse
from memory.agent.scopes import (
    ADR,
    CODEBASE_DISCOVERY,
    FAILED_APPROACH,
    GOTCHA,
    PATTERN,
    SESSION_INSIGHT,
    TASK_OUTCOME,
    project_group,
)
from memory.agent.sessions import session_history, session_line
from memory.agent.validity import in_force
from seeds import put_if_changed

DEFAULT_CONTEXT_CHARS = 4000
_CONTEXT_ITEMS = 5


@dataclass(frozen=True)
class SimilarOutcome:
    """A past outcome like the task at hand; read as the design reads one
    (``outcome["task_id"]``, ``outcome.get("lessons_learned", [])``): the outcome's fields,
    and ``score`` and ``recorded_at``."""

    outcome: TaskOutcome
    score: float
    recorded_at: datetime

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key) if key in ("score", "recorded_at") else self.outcome[key]

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


def session_from_json(
    text: str, *, file_name: str = "", session_num: int | None = None
) -> tuple[int, dict[str, Any]]:
    """An Auto-Claude session file (``session_NNN.json``) as ``(number, insights)``; the number
    is ``session_num``, else the file's ``session_number``, else the one in its name."""
    insights = json_object(text, file_name or "session file")
    number = session_num if session_num is not None else session_number(insights, file_name)
    if number is None:
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
        self.group = project_group(project_id)
        self.scope = Scope(self.group, spec, source)

    async def _save(self, episodes: Iterable[Episode]) -> list[Episode]:
        """Write each memory unless the store holds it as it is; a stored one is merged with it
        first (``backends.insights.merge``). Returns the memories as stored."""
        saved = []
        for episode in episodes:
            stored = await self.store.get(episode.id)
            if stored is not None:
                episode = merge(*sorted((stored, episode), key=lambda e: e.created_at))
            saved.append((await put_if_changed(self.store, episode))[1])
        return saved

    async def _insight(self, kind: str, item: str | Mapping[str, Any]) -> Episode:
        episode = insight(self.scope, kind, item, now())
        if episode is None:
            raise InvalidEpisode(f"a {kind} needs some text")
        return (await self._save([episode]))[0]

    async def add_pattern(self, pattern: str | Mapping[str, Any]) -> Episode:
        """A pattern (text, or ``{"pattern": ..., ...}``); the same text again is one memory."""
        return await self._insight(PATTERN, pattern)

    async def add_gotcha(self, gotcha: str | Mapping[str, Any]) -> Episode:
        """A gotcha (text, or ``{"gotcha": ..., ...}``); the same text again is one memory."""
        return await self._insight(GOTCHA, gotcha)

    async def add_codebase_discoveries(
        self, discoveries: Mapping[str, Any] | Iterable[Mapping[str, Any]]
    ) -> list[Episode]:
        """What files are for: ``{path: description}`` or ``[{"path": ..., ...}]``; one memory
        per path, a later description updating the earlier one."""
        when = now()
        files = file_items(discoveries if isinstance(discoveries, Mapping) else list(discoveries))
        return await self._save(file_discovery(self.scope, item, when) for item in files)

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
        return await self._put_outcome(record)

    async def capture_task_outcome(self, **fields: Any) -> str:
        """Record an outcome given as the design's ``TaskOutcome`` fields (``outcome_type``,
        ``task_id``, ``task_title``, ``summary``, ``success``, ``lessons_learned``, ...), as
        written, and return its ``OUT-XXXXXXXX`` id: the write is durable in some layer (the
        file layer alone, when the graph is busy elsewhere) or this raises."""
        try:
            record = TaskOutcome.model_validate(fields)
        except ValidationError as exc:
            raise InvalidEpisode(f"not a task outcome: {problems(exc)}") from None
        if not record.task_id.strip():
            raise InvalidEpisode("a task outcome needs its task_id")
        data = (await self._put_outcome(record)).data
        return str(data["id"]) if isinstance(data, dict) else record.id

    async def _put_outcome(self, record: TaskOutcome) -> Episode:
        key = record.key()
        if not record.id:
            record = record.model_copy(update={"id": outcome_id(self.scope.id(TASK_OUTCOME, key))})
        episode = self.scope.episode(TASK_OUTCOME, key, record.name(), record.body(),
                                     record.created_at or now())
        stored = await self.store.get(episode.id)
        if stored is None:
            return (await put_if_changed(self.store, episode))[1]
        # A task captured again is in its latest state, whole: laid over the earlier capture,
        # a completion kept the blocked capture's status and problems. The earlier ones are
        # kept, newest last, in ``earlier``.
        data = stored.data if isinstance(stored.data, dict) else {"outcome": stored.body}
        previous = {k: v for k, v in data.items() if k != "earlier"}
        if previous == episode.data:
            return stored
        body = {**episode.data, "earlier": [*data.get("earlier", ()), previous]}
        return (await put_if_changed(self.store, self.scope.episode(
            TASK_OUTCOME, key, record.name(), body, stored.created_at)))[1]

    async def save_session_insights(
        self, session_num: int, insights: Mapping[str, Any]
    ) -> list[Episode]:
        """Save one session's insights (any of Auto-Claude's shapes) as focused memories
        (``backends.insights``); returns them, the session insight first. Saving the same
        session again adds nothing."""
        if session_num < 0:
            raise InvalidEpisode(f"session number must be 0 or more, not {session_num}")
        when = parse_time(insights.get("timestamp"))
        if when is None:
            # Without a timestamp of its own, a session keeps the one it was first saved with, so
            # saving it again rewrites nothing.
            earlier = await self.store.get(self.scope.id(SESSION_INSIGHT, session_key(session_num)))
            data = earlier.data if earlier is not None else None
            when = (parse_time(data.get("timestamp")) if isinstance(data, dict) else None) or now()
        return await self._save(split_session(self.scope, session_num, insights, when))

    async def memories(self, kinds: Sequence[str] | None = None) -> list[Episode]:
        """This memory's episodes (of ``kinds``; default all), oldest first: the spec's own when
        ``spec`` is given, else every memory of the project, every spec's included. Exact."""
        return [
            episode
            async for episode in self.store.scan(group_ids=[self.group], kinds=kinds)
            if self.scope.mine(episode)
        ]

    async def get_session_history(self, limit: int = 5) -> list[dict[str, Any]]:
        """The last ``limit`` session insights, newest (highest session number) first; exact."""
        return await session_history(self.store, self.scope, limit)

    async def get_similar_task_outcomes(
        self, description: str, limit: int = 5
    ) -> list[SimilarOutcome]:
        """Outcomes of tasks like ``description``, best match first, with the search score."""
        hits = await self.store.search(
            description, group_ids=[self.group], kinds=[TASK_OUTCOME], limit=limit
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
            self.store.search(task, group_ids=[self.group], kinds=kinds, limit=_CONTEXT_ITEMS)
            for _, kinds in sections
        ))
        blocks = [
            (heading, [describe(hit.episode) for hit in hits if in_force(hit.episode)])
            for (heading, _), hits in zip(sections, results, strict=True)
        ]
        blocks.append(("Recent sessions", [
            session_line(data) for data in await self.get_session_history(3)
        ]))
        return bounded_markdown("Memory for this task", blocks, max_chars)


async def search(
    store: MemoryBackend,
    query: str,
    group_ids: Sequence[str] | None = None,
    num_results: int = 10,
    *,
    kinds: Sequence[str] | None = None,
) -> list[Hit]:
    """000's ``search(query, group_ids, num_results)`` over a store: ``MemoryBackend.search``
    with the design's name for the limit."""
    return await store.search(query, group_ids=group_ids, kinds=kinds, limit=num_results)


