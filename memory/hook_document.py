"""The JSON document a Claude Code hook prints; apart from ``memory.hooks`` so that the tool
hook's quick answer (``memory.tool_quick``) prints it without importing the hooks' store
and context."""

from __future__ import annotations

from typing import Any


def hook_output(event: str, context: str = "", message: str = "") -> dict[str, Any]:
    """The JSON a hook prints: ``context`` added to the session and ``message`` shown to the
    user (each left out when empty)."""
    document: dict[str, Any] = {"systemMessage": message} if message else {}
    if context:
        document["hookSpecificOutput"] = {"hookEventName": event, "additionalContext": context}
    return document
