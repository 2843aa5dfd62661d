"""Claude Code hooks: what dualmem adds to a session, and what it keeps from one.

Claude Code runs a hook command with one JSON document on stdin (``HookInput``) and reads one
JSON document on its stdout when it exits 0 (``hook_output``); exit 2 would block the prompt or
the stop, so ``dualmem hook`` always exits 0. Three hooks:

- ``SessionStart`` (startup, resume, clear, compact): ``session_context``, the project's
  memory in brief (gotchas, patterns, decisions, recent sessions) within a token budget, or
  the context of a task when one is named;
- ``UserPromptSubmit``: ``prompt_context``, the memories relevant to the prompt, only those
  that clear the relevance threshold (nothing at all otherwise);
- ``Stop``: ``read_lessons`` takes what the assistant marked as learned from the transcript,
  and ``record_lessons`` stores it. A lesson is a line of an assistant reply, outside code
  blocks, that starts with a label (a bullet and bold are fine)::

      Gotcha: rename() is not atomic across file systems
      Pattern: write to a temp file, fsync, then rename
      Discovery: src/store.py: saves notes atomically

  Stop runs after every turn and reads the whole transcript; a lesson saved again is the same
  memory, unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from backends.errors import DualmemError
from backends.model import Episode, natural_key
from backends.protocol import MemoryBackend
from memory.agent.markdown import bounded_markdown, describe
from memory.agent.records import json_object
from memory.agent.scopes import (
    ADR,
    FAILED_APPROACH,
    GOTCHA,
    PATTERN,
    PROJECT_OVERVIEW,
    SESSION_INSIGHT,
)
from memory.context.thresholds import Thresholds
from memory.context.tokens import estimate_tokens
from memory.context.topic import topic

if TYPE_CHECKING:
    from seeds import Overrides

SESSION_TOKENS = 1500
PROMPT_TOKENS = 600
PROMPT_LIMIT = 5
PROMPT_THRESHOLD = Thresholds().familiar
"""The score a memory needs to be added to a prompt: the calibrated one that context assembly
keeps a memory at (see ``memory.context.retrieval``)."""
QUERY_CHARS = 2000
"""A pasted log makes a long prompt; its start says what it is about, and search stays fast."""
SECTION_LINES = 8
SOURCE = "claude_code"
HOW_TO_SAVE = (
    "Keep what you learn for later sessions: call the dualmem MCP tool add_memory, or write "
    "a line 'Gotcha: ...', 'Pattern: ...' or 'Discovery: PATH: what it is for' in a reply."
)
_DIGEST = (
    ("Gotchas and failed approaches", (GOTCHA, FAILED_APPROACH)),
    ("Patterns", (PATTERN,)),
    ("Decisions in force", (ADR,)),
)
_NOT_FOR_PROMPTS = frozenset({SESSION_INSIGHT, PROJECT_OVERVIEW})
_LESSON = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?(gotcha|pattern|discovery)(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*"
    r"(.+?)\s*$",
    re.IGNORECASE,
)
_DISCOVERY = re.compile(r"^`?([^\s`:]+)`?\s*(?::|—|–|\s-)\s*(.+)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LABELS = (b"gotcha", b"pattern", b"discovery")


class HookInputError(DualmemError):
    """What Claude Code sent a hook is not a hook's JSON document."""


class HookInput(NamedTuple):
    """The fields of Claude Code's hook input that dualmem reads (the others are ignored)."""

    hook_event_name: str = ""
    session_id: str = ""
    cwd: str | None = None
    transcript_path: str | None = None
    source: str | None = None
    """SessionStart: startup, resume, clear or compact."""
    prompt: str = ""
    """UserPromptSubmit: what the user typed."""
    stop_hook_active: bool = False
    """Stop: true when the session continues because a stop hook asked it to."""
    last_assistant_message: str | None = None
    """Stop: the reply that ended the turn (newer Claude Code versions send it)."""

    @classmethod
    def from_json(cls, raw: bytes) -> HookInput:
        # Read by hand, not by a pydantic model: a hook runs on every prompt, and pydantic's
        # import would be a third of its start-up.
        try:
            document = json_object(raw, "hook input")
        except DualmemError as exc:
            raise HookInputError(str(exc)) from None
        wrong = [f"{name}: Input should be {_HOOK_TYPES[kind]}"
                 for name, kind in _HOOK_FIELDS.items()
                 if name in document and not _is(document[name], kind)]
        if wrong:
            raise HookInputError(f"hook input: {'; '.join(wrong)}")
        return cls(**{name: document[name] for name in _HOOK_FIELDS if name in document})


_HOOK_FIELDS = {"hook_event_name": "str", "session_id": "str", "cwd": "str?",
                "transcript_path": "str?", "source": "str?", "prompt": "str",
                "stop_hook_active": "bool", "last_assistant_message": "str?"}
_HOOK_TYPES = {"str": "a valid string", "str?": "a valid string or null",
               "bool": "a valid boolean"}


def _is(value: object, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    return isinstance(value, str) or (kind == "str?" and value is None)


def hook_output(event: str, context: str = "") -> dict[str, Any]:
    """The JSON a hook prints: ``context`` added to the session (nothing when empty)."""
    if not context:
        return {}
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}


async def session_context(
    store: MemoryBackend,
    project_id: str,
    *,
    tokens: int = SESSION_TOKENS,
    task: str | None = None,
    overrides: Overrides | None = None,
) -> str:
    """What a new session should know, within ``tokens``: the context of ``task`` when given,
    else the project's newest gotchas, patterns and decisions in force and its latest
    sessions, then how to keep what the session learns."""
    # Imported here, not with the module: the prompt hook, which runs on every prompt, needs
    # neither the agent API nor context assembly (and what they load).
    from memory.agent.memories import AgentMemory, session_line
    from memory.context.assemble import build_context
    from memory.context.task import Task

    if task:
        result = await build_context(store, Task(description=task), project_id=project_id,
                                     tokens=tokens, overrides=overrides)
        return result.markdown
    newest: dict[str, list[str]] = {title: [] for title, _ in _DIGEST}
    section_of = {kind: title for title, kinds in _DIGEST for kind in kinds}
    async for episode in store.scan(group_ids=[project_id], kinds=list(section_of)):
        if episode.invalid_at is None:
            newest[section_of[episode.kind]].append(describe(episode))
    blocks = [(title, lines[::-1][:SECTION_LINES]) for title, lines in newest.items()]
    sessions = await AgentMemory(store, project_id).get_session_history(3)
    blocks.append(("Recent sessions", [session_line(data) for data in sessions]))
    blocks.append(("Saving what you learn", [HOW_TO_SAVE]))
    return bounded_markdown("This project's memory (dualmem)", blocks, tokens, estimate_tokens)


async def prompt_context(
    store: MemoryBackend,
    project_id: str,
    prompt: str,
    *,
    threshold: float = PROMPT_THRESHOLD,
    limit: int = PROMPT_LIMIT,
    tokens: int = PROMPT_TOKENS,
) -> str:
    """The project's memories relevant to ``prompt`` (score at least ``threshold``, in force),
    best first, within ``tokens``; empty when none is, or for a slash command."""
    query = topic(prompt)[:QUERY_CHARS]
    if not query.strip() or prompt.lstrip().startswith("/"):
        return ""
    hits = await store.search(query, group_ids=[project_id], limit=2 * limit)
    lines = [
        f"{hit.episode.kind}: {describe(hit.episode)}" for hit in hits
        if hit.score >= threshold and hit.episode.invalid_at is None
        and hit.episode.kind not in _NOT_FOR_PROMPTS
    ][:limit]
    return bounded_markdown("From this project's memory (dualmem)",
                            [("Relevant to this prompt", lines)], tokens, estimate_tokens)


@dataclass
class Lessons:
    """What a session marked as learned, each once, in the order first written."""

    gotchas: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    discoveries: dict[str, str] = field(default_factory=dict)
    """path -> what it is for"""

    def __bool__(self) -> bool:
        return bool(self.gotchas or self.patterns or self.discoveries)

    def add(self, label: str, text: str) -> None:
        if label == "discovery":
            found = _DISCOVERY.match(text)
            if found:  # a discovery that names no file says nothing a search can use
                self.discoveries.setdefault(found.group(1), found.group(2))
            return
        items = self.gotchas if label == "gotcha" else self.patterns
        key = natural_key(text)
        if key and key not in map(natural_key, items):
            items.append(text)


def read_lessons(transcript: Path | None, last_message: str | None = None) -> Lessons:
    """The lessons in the assistant's replies of a Claude Code transcript (JSON Lines; an
    unreadable line is skipped) and in ``last_message``. A missing transcript has none."""
    lessons = Lessons()
    texts: list[str] = list(_assistant_texts(transcript)) if transcript is not None else []
    if last_message:
        texts.append(last_message)
    for text in texts:
        for label, lesson in _labelled_lines(text):
            lessons.add(label, lesson)
    return lessons


def _assistant_texts(transcript: Path) -> Iterator[str]:
    try:
        lines = transcript.open("rb")
    except FileNotFoundError:
        return
    with lines:
        for line in lines:
            # Most lines hold no lesson; only those that might are parsed.
            if not any(label in line.lower() for label in _LABELS):
                continue
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(entry, dict) or entry.get("type") != "assistant":
                continue
            message = entry.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str):
                yield content
            elif isinstance(content, list):
                yield from (
                    block["text"] for block in content
                    if isinstance(block, dict) and block.get("type") == "text"
                    and isinstance(block.get("text"), str)
                )


def _labelled_lines(text: str) -> Iterator[tuple[str, str]]:
    in_code = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_code = not in_code
        elif not in_code and (found := _LESSON.match(line)):
            yield found.group(1).lower(), found.group(2)


async def record_lessons(
    store: MemoryBackend, project_id: str, lessons: Lessons
) -> Sequence[Episode]:
    """Store the lessons in the project's memory; a lesson stored before is left as it is."""
    from memory.agent.memories import AgentMemory  # see session_context

    memory = AgentMemory(store, project_id, source=SOURCE)
    saved = [await memory.add_gotcha(text) for text in lessons.gotchas]
    saved += [await memory.add_pattern(text) for text in lessons.patterns]
    if lessons.discoveries:
        saved += await memory.add_codebase_discoveries(lessons.discoveries)
    return saved
