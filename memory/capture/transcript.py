"""Claude Code's transcript, one JSON Lines entry at a time, as the events capture reads.

Claude Code appends one JSON object per line to ``~/.claude/projects/<project>/<session>.jsonl``
(its subagents' to ``<session>/subagents/agent-<id>.jsonl``): ``user`` entries hold what was
typed or ``tool_result`` blocks (the structured result beside them in ``toolUseResult``),
``assistant`` entries hold ``text`` and ``tool_use`` blocks, and ``system`` / ``summary`` /
``queue-operation`` entries hold bookkeeping. Not everything a ``user`` entry holds was typed:

- a compaction's summary ("This session is being continued from a previous conversation ...",
  ``isCompactSummary``) is a ``Compaction``;
- slash-command wrappers (``<command-name>``, ``<local-command-stdout>``), meta entries (``isMeta``:
  caveats, hook feedback), task notifications and interruptions are nothing;
- only what remains is a ``Prompt``.

``parse_line`` never raises for a line's content: a line that is no JSON object is ``None`` (the
caller counts it); text that is not UTF-8 is read with replacement characters."""

from __future__ import annotations

from collections.abc import Callable

from backends.json_read import loads
from backends.lean_typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from typing import Any

CONTINUED = "This session is being continued from a previous conversation"
_NOT_PROMPTS = ("<command-name>", "<command-message>", "<local-command-stdout>",
                "<local-command-stderr>", "<command-args>", "<task-notification>",
                "<bash-input>", "<bash-stdout>", "<bash-stderr>", "<user-memory-input>",
                "Caveat: The messages below were generated", "[Request interrupted",
                "<system-reminder>")
MAX_TEXT = 20_000
"""characters kept of one text or tool output: enough for an error's key line and a reply"""


class Meta(NamedTuple):
    """Where an entry sits: its ``uuid``, ``timestamp``, ``sessionId``, ``cwd``, and whether it
    is a subagent's (``isSidechain``)."""

    uuid: str
    time: str
    session_id: str
    cwd: str
    sidechain: bool


class Prompt(NamedTuple):
    text: str


class Compaction(NamedTuple):
    text: str


class Reply(NamedTuple):
    """Text the assistant wrote."""

    text: str


class ToolUse(NamedTuple):
    id: str
    name: str
    input: dict[str, Any]


class ToolResult(NamedTuple):
    tool_use_id: str
    is_error: bool
    text: str
    result: Any
    """``toolUseResult``: the structured result (a dict for most tools, a string on errors)"""


Event = Prompt | Compaction | Reply | ToolUse | ToolResult


class Entry(NamedTuple):
    meta: Meta
    events: list[Event]


def parse_line(raw: bytes, *, lean: bool = False) -> Entry | None:
    """The events of one transcript line; None when it is no JSON object (damaged, cut). Parsed
    by orjson, or ``lean`` by the standard library as orjson parses it (``json_read.loads``):
    for a few lines, where orjson's import would cost a later Stop a quarter of its time."""
    parse: Callable[[bytes | str], Any] = loads
    if not lean:
        import orjson

        parse = orjson.loads
    try:
        entry = parse(raw)
    except (ValueError, RecursionError):  # orjson's JSONDecodeError is a ValueError
        try:
            entry = parse(raw.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            return None
    if not isinstance(entry, dict):
        return None
    meta = Meta(_str(entry.get("uuid")), _str(entry.get("timestamp")),
                _str(entry.get("sessionId")), _str(entry.get("cwd")),
                entry.get("isSidechain") is True)
    kind = entry.get("type")
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if kind == "assistant":
        return Entry(meta, list(_assistant(content)))
    if kind == "user":
        return Entry(meta, list(_user(entry, content)))
    return Entry(meta, [])


def _assistant(content: Any) -> list[Event]:
    # A reply is kept whole (its every labelled lesson counts); tool outputs are cut.
    if isinstance(content, str):
        return [Reply(content)] if content.strip() else []
    events: list[Event] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            events.append(Reply(block["text"]))
        elif block.get("type") == "tool_use" and isinstance(block.get("name"), str):
            given = block.get("input")
            events.append(ToolUse(_str(block.get("id")), block["name"],
                                  given if isinstance(given, dict) else {}))
    return events


def _user(entry: dict[str, Any], content: Any) -> list[Event]:
    text = content if isinstance(content, str) else "\n".join(
        block["text"] for block in content
        if isinstance(block, dict) and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ) if isinstance(content, list) else ""
    if entry.get("isCompactSummary") is True or text.lstrip().startswith(CONTINUED):
        return [Compaction(_clean(text))]
    events: list[Event] = []
    if isinstance(content, list):
        results = [block for block in content
                   if isinstance(block, dict) and block.get("type") == "tool_result"]
        for block in results:
            events.append(ToolResult(_str(block.get("tool_use_id")), block.get("is_error") is True,
                                     _clean(_result_text(block.get("content"))),
                                     entry.get("toolUseResult") if len(results) == 1 else None))
    if entry.get("isMeta") is True or not text.strip():
        return events
    if not text.lstrip().startswith(_NOT_PROMPTS):
        events.append(Prompt(_clean(text)))
    return events


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(block["text"] for block in content
                         if isinstance(block, dict) and isinstance(block.get("text"), str))
    return ""


def _clean(text: str) -> str:
    """At most ``MAX_TEXT`` characters (a long output's end says most: a test run's verdict is
    its last line). Secrets are redacted later, in the little that is kept."""
    if len(text) > MAX_TEXT:
        return text[: MAX_TEXT // 4] + "\n…\n" + text[-3 * MAX_TEXT // 4 :]
    return text


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""
