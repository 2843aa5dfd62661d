"""With an LLM configured, each captured session is also summarised by the LLM, in the same
shape, beside what capture derived (the insight's ``llm`` field): never needed, never in a
hook's way (it runs on ``dualmem enrich``, which a SessionEnd starts in the background).

The LLM sees the derived insight only (already redacted), not the transcript. A summary records
the digest of what it summarised (``basis``), so a session is summarised again only once what
capture derived of it changed; derived updates keep the field (``united.united``)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import orjson
from pydantic import BaseModel

from backends.protocol import MemoryBackend
from memory.agent.scopes import SESSION_INSIGHT, project_group
from memory.capture.derive import SOURCE
from memory.capture.redact import redact

INSTRUCTIONS = (
    "You summarise one coding-agent session for the project's memory, from the facts a tool "
    "derived of its transcript (JSON). Say what was done, what each file named is for, what "
    "worked, what failed and what the next session should do. Use only those facts; be "
    "brief; leave a list empty rather than guess."
)


class FilePurpose(BaseModel):
    path: str
    purpose: str


class SessionSummary(BaseModel):
    """Auto-Claude's session insight, as an LLM writes it."""

    what_was_done: str
    files_understood: list[FilePurpose]
    what_worked: list[str]
    what_failed: list[str]
    recommendations_for_next_session: list[str]


def basis(data: dict[str, Any]) -> str:
    derived = {key: value for key, value in data.items() if key != "llm"}
    return hashlib.blake2b(orjson.dumps(derived, option=orjson.OPT_SORT_KEYS),
                           digest_size=12).hexdigest()


async def summarise_sessions(
    store: MemoryBackend, project_id: str, llm: Any,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Summarise each captured session of the project not yet summarised at what capture
    derived of it; returns how many were. Raises ``ProviderFailed`` when the LLM fails (what
    was summarised before stays)."""
    from backends.graph.remote import answer

    waiting = []
    async for episode in store.scan(group_ids=[project_group(project_id)],
                                    kinds=[SESSION_INSIGHT]):
        data = episode.data
        if episode.source != SOURCE or not isinstance(data, dict):
            continue
        known = data.get("llm")
        if not isinstance(known, dict) or known.get("basis") != basis(data):
            waiting.append(episode)
    for done, episode in enumerate(waiting):
        data = episode.data
        derived = {key: value for key, value in data.items() if key != "llm"}
        summary = await answer(llm, INSTRUCTIONS, orjson.dumps(derived).decode(), SessionSummary)
        summary = orjson.loads(redact(orjson.dumps(summary).decode()))
        body = {**data, "llm": {**summary, "basis": basis(data)}}
        await store.upsert(episode.model_copy(update={"body": orjson.dumps(body).decode()}))
        if progress is not None:
            progress(done + 1, len(waiting))
    return len(waiting)
