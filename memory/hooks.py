"""Claude Code hooks: what dualmem adds to a session, and what it keeps from one.

Claude Code runs a hook command with one JSON document on stdin (``HookInput``) and reads one
JSON document on its stdout when it exits 0 (``hook_output``); exit 2 would block the prompt or
the stop, so ``dualmem hook`` always exits 0. Three hooks:

- ``SessionStart`` (startup, resume, clear, compact): ``session_context``, the project's
  memory in brief (gotchas, patterns, decisions, recent sessions) within a token budget, or
  the context of a task when one is named;
- ``UserPromptSubmit``: ``prompt_context``, the memories relevant to the prompt, only those
  that clear the relevance threshold (nothing at all otherwise);
- ``Stop``, ``SessionEnd`` and ``PreCompact``: capture (``memory.capture``) reads what the
  transcript gained since the last capture and keeps what the session learned: the lessons the
  agent labelled (``Gotcha:``, ``Pattern:``, ``Discovery:``), a session insight, discoveries
  of the files it changed or studied, the failures it fixed and its task outcome. Stop says
  what was kept in one line (``systemMessage``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from backends.errors import DualmemError
from backends.protocol import MemoryBackend
from memory.agent.lines import bounded_markdown, describe  # not .markdown: its export's imports
from memory.agent.records import json_object
from memory.agent.scopes import (
    ADR,
    FAILED_APPROACH,
    GOTCHA,
    PATTERN,
    PROJECT_OVERVIEW,
    SESSION_INSIGHT,
    project_group,
)
from memory.agent.validity import in_force
from memory.context.salient import salient_query
from memory.context.thresholds import Thresholds
from memory.context.tokens import estimate_tokens
from memory.context.topic import topic
from memory.hook_document import hook_output as hook_output  # where the CLI reads it

if TYPE_CHECKING:
    from memory.context.areas import AreaGuess
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
    tool_name: str = ""
    """PostToolUse: the tool that ran (``Read``, ``Edit``, ``Bash``, ...)."""
    tool_input: dict[str, Any] | None = None
    """PostToolUse: what the tool was given (``file_path``, ``command``, ...)."""

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
                "stop_hook_active": "bool", "last_assistant_message": "str?",
                "tool_name": "str", "tool_input": "dict?"}
_HOOK_TYPES = {"str": "a valid string", "str?": "a valid string or null",
               "bool": "a valid boolean", "dict?": "a valid dictionary or null"}


def _is(value: object, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "dict?":
        return value is None or isinstance(value, dict)
    return isinstance(value, str) or (kind == "str?" and value is None)


async def session_context(
    store: MemoryBackend,
    project_id: str,
    *,
    tokens: int = SESSION_TOKENS,
    task: str | None = None,
    overrides: Overrides | None = None,
    files: Sequence[str] = (),
    guess_areas: AreaGuess | None = None,
) -> str:
    """What a new session should know, within ``tokens``: the context of ``task`` when given
    (``guess_areas``: the areas it touches, by the configured LLM),
    else the project's newest gotchas, patterns and decisions in force and its latest
    sessions, then how to keep what the session learns."""
    # Imported here, not with the module: the prompt hook, which runs on every prompt, needs
    # neither the agent API nor context assembly (and what they load).
    from backends.insights import Scope
    from memory.agent.newest import newest_in_force
    from memory.agent.sessions import session_history, session_line

    if task:
        from memory.context.assemble import build_context
        from memory.context.task import Task

        result = await build_context(store, Task(description=task, files=tuple(files)),
                                     project_id=project_id, tokens=tokens, overrides=overrides,
                                     guess_areas=guess_areas)
        return result.markdown
    blocks = [(title, [describe(episode) for episode in await newest_in_force(
        store, [project_id], kinds, SECTION_LINES)]) for title, kinds in _DIGEST]
    blocks.insert(0, ("About the files you work on",
                      await _file_lines(store, project_id, files, SECTION_LINES, set())))
    sessions = await session_history(store, Scope(project_group(project_id)), 3)
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
    files: Sequence[str] = (),
) -> str:
    """The project's memories relevant to ``prompt`` (score at least ``threshold``, in force),
    best first, then those naming the working set's ``files``, within ``tokens``; empty when
    none is, or for a slash command."""
    query = topic(prompt)[:QUERY_CHARS]
    if not query.strip() or prompt.lstrip().startswith("/"):
        return ""
    query = await salient_query(store, query, [project_id])
    hits = await store.search(query, group_ids=[project_id], limit=2 * limit)
    lines = [
        f"{hit.episode.kind}: {describe(hit.episode)}" for hit in hits
        if hit.score >= threshold and in_force(hit.episode)
        and hit.episode.kind not in _NOT_FOR_PROMPTS
    ][:limit]
    blocks = [("Relevant to this prompt", lines),
              ("About the files you work on", await _file_lines(store, project_id, files,
                                                                 limit, set(lines)))]
    return bounded_markdown("From this project's memory (dualmem)", blocks, tokens,
                            estimate_tokens)


async def _file_lines(store: MemoryBackend, project_id: str, files: Sequence[str], limit: int,
                      listed: set[str]) -> list[str]:
    """The memories naming ``files`` (in force, not already ``listed``), at most ``limit``."""
    from memory.context.file_memories import NAMED, file_memories

    hits = await file_memories(store, files, [project_id], areas=False)
    lines = [f"{hit.episode.kind}: {describe(hit.episode)}" for hit in hits
             if hit.score >= NAMED and in_force(hit.episode)
             and hit.episode.kind not in _NOT_FOR_PROMPTS]
    return [line for line in dict.fromkeys(lines) if line not in listed][:limit]
