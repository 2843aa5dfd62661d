"""The configured LLM names the areas of the project a task will touch, where its words name
none (issue 17: the conventions of such areas held most of what context missed). Off unless
asked for (``dualmem context --infer-areas``, MCP's ``get_task_context(infer_areas=True)``,
``dualmem config set infer-areas on`` for the session-start hook) and an LLM is configured.

What a task costs is bounded: the task's text cut to ``TASK_CHARS``, at most ``MAX_AREAS``
areas (the caller lists the busiest first), each cut to ``AREA_CHARS``, so a prompt is at most
``MAX_PROMPT_CHARS``; the answer is at most ``MAX_NAMED`` numbers (``MAX_ANSWER_TOKENS``) and
the call has ``DEADLINE`` seconds. The answer is hostile input: it can only pick areas by their
numbers in the list shown; anything else is dropped. Whatever goes wrong leaves no area named
(``memory.store.llm_call``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memory.store.config import Config
from memory.store.llm_call import bounded_answer, cut, numbered
from memory.store.providers import llm_for
from memory.store.settings import read_settings

log = logging.getLogger(__name__)

MAX_AREAS = 60
AREA_CHARS = 80
TASK_CHARS = 500
MAX_NAMED = 3
"""areas taken from an answer: a task touches few, and each brings its conventions"""
INSTRUCTIONS = (
    "You name the parts of a code base a developer's task will touch. The user message holds "
    "the task and the project's numbered folders. Answer with the numbers of the folders the "
    f"task will change or depend on, at most {MAX_NAMED}, the likeliest first; none if no "
    "folder fits.")
MAX_PROMPT_CHARS = len(INSTRUCTIONS) + TASK_CHARS + MAX_AREAS * (AREA_CHARS + 8) + 20
MAX_PROMPT_TOKENS = MAX_PROMPT_CHARS // 4 + 1
MAX_ANSWER_TOKENS = 4 * MAX_NAMED + 20
"""a JSON list of at most ``MAX_NAMED`` small numbers"""
DEADLINE = 10.0
"""seconds the LLM has before the context goes without inferred areas"""
SETTING = "infer_areas"
"""``dualmem config set infer-areas on``: the session-start hook asks"""


class NamedAreas(BaseModel):
    areas: list[int]


def prompt(task: str, areas: Sequence[str]) -> str:
    """The user message: the task and the first ``MAX_AREAS`` areas, numbered from 1."""
    return "\n".join([f"Task: {cut(task, TASK_CHARS)}",
                      *numbered(areas, MAX_AREAS, AREA_CHARS)])


def picked(areas: Sequence[str], numbers: Sequence[int]) -> list[str]:
    """The shown areas ``numbers`` name (from 1; unknown and repeated ones ignored), at most
    ``MAX_NAMED``."""
    shown = areas[:MAX_AREAS]
    return list(dict.fromkeys(shown[n - 1] for n in numbers if 1 <= n <= len(shown)))[:MAX_NAMED]


async def guess_areas(llm: Any, task: str, areas: Sequence[str], *,
                      deadline: float = DEADLINE) -> list[str]:
    """The areas of ``areas`` that ``llm`` (graphiti's ``LLMClient``) says ``task`` will touch;
    none when it fails, and no call when there is no area to choose from."""
    if not areas:
        return []
    given = await bounded_answer(llm, INSTRUCTIONS, prompt(task, areas), NamedAreas,
                                 max_tokens=MAX_ANSWER_TOKENS, deadline=deadline, log=log,
                                 skipped="area inference skipped, the context as offline")
    return [] if given is None else picked(areas, given["areas"])


def hooks_infer(home: Path) -> bool:
    """Whether the home keeps ``infer-areas on`` for its hooks."""
    return read_settings(home).get(SETTING) == "on"


def area_guesser(config: Config) -> Callable[[str, Sequence[str]], Awaitable[list[str]]] | None:
    """``guess_areas`` with the LLM ``config`` names (``memory.context.areas.AreaGuess``);
    None when none is configured. Its client is made at the first guess: a server that is
    never asked imports no SDK."""
    if config.llm is None:
        return None
    made: list[Any] = []

    async def guess(task: str, areas: Sequence[str]) -> list[str]:
        if not made:
            made.append(llm_for(config))
        return await guess_areas(made[0], task, areas)

    return guess
