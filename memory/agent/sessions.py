"""A project's session insights: the newest few, and each in one line.

Apart from ``memory.agent.memories`` so that the session-start hook, which runs before every
session, lists them without loading the agent API (and pydantic, through the outcomes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from backends.insights import Scope, item_text
from backends.protocol import MemoryBackend
from memory.agent.scopes import SESSION_INSIGHT


async def session_history(store: MemoryBackend, scope: Scope, limit: int) -> list[dict[str, Any]]:
    """The last ``limit`` session insights of ``scope``, newest (highest session number)
    first; exact."""
    sessions = []
    async for episode in store.scan(group_ids=[scope.group_id], kinds=[SESSION_INSIGHT]):
        data = episode.data
        if scope.mine(episode) and isinstance(data, dict):
            number = data.get("session_number")
            order = number if isinstance(number, int) else -1
            sessions.append((order, episode.created_at, data))
    sessions.sort(key=lambda s: (s[0], s[1]), reverse=True)
    return [data for _, _, data in sessions[: max(limit, 0)]]


def session_line(data: Mapping[str, Any]) -> str:
    """A session insight in one line: its number (and spec), what worked, failed, and comes
    next."""
    spec = f" ({data['spec']})" if data.get("spec") else ""
    parts = [f"Session {data.get('session_number', '?')}{spec}"]
    for label, field in (("worked", "what_worked"), ("failed", "what_failed"),
                         ("next", "recommendations_for_next_session")):
        items = [item_text(item) for item in data.get(field) or []]
        if items:
            parts.append(f"{label}: {'; '.join(items)}")
    return " | ".join(parts)
