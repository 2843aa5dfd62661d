"""The configured LLM reorders a search's first hits, where the offline signals run out (a
question whose answer spans memories that share few words with it and with each other: issue
15's multi-hop). Off unless asked for (``dualmem search --rerank``) and an LLM is configured.

What a query costs is bounded: at most ``CANDIDATES`` hits are shown, each cut to
``PASSAGE_CHARS``, so a prompt is at most ``MAX_PROMPT_CHARS`` (about ``MAX_PROMPT_TOKENS``
tokens at four characters a token) and the answer a short list of numbers (``MAX_ANSWER_TOKENS``).
The call has ``DEADLINE`` seconds. Whatever goes wrong (no answer in time, a failing endpoint,
an answer that is not a reordering) leaves the offline ranking as it was, said in one line on
stderr under ``--verbose``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from backends.model import Hit
from memory.store.llm_call import bounded_answer, cut, numbered

log = logging.getLogger(__name__)

CANDIDATES = 10
"""hits shown to the LLM: the rest keep their places below them"""
PASSAGE_CHARS = 300
"""of each hit's text"""
QUERY_CHARS = 500
INSTRUCTIONS = (
    "You rank a developer's stored memories for a question. The user message holds the "
    "question and numbered memories. Answer with the numbers of the memories that help answer "
    "the question, the most useful first, including those that only help together with "
    "another; leave out the rest.")
MAX_PROMPT_CHARS = len(INSTRUCTIONS) + QUERY_CHARS + CANDIDATES * (PASSAGE_CHARS + 8) + 20
MAX_PROMPT_TOKENS = MAX_PROMPT_CHARS // 4 + 1
MAX_ANSWER_TOKENS = 4 * CANDIDATES + 20
"""a JSON list of at most ``CANDIDATES`` small numbers"""
DEADLINE = 10.0
"""seconds the LLM has before the offline ranking is kept"""


class RerankedOrder(BaseModel):
    order: list[int]


def prompt(query: str, hits: Sequence[Hit]) -> str:
    """The user message: the question and the first ``CANDIDATES`` hits, numbered from 1."""
    shown = numbered([hit.episode.body for hit in hits], CANDIDATES, PASSAGE_CHARS)
    return "\n".join([f"Question: {cut(query, QUERY_CHARS)}", *shown])


def reordered(hits: Sequence[Hit], order: Sequence[int]) -> list[Hit]:
    """The shown hits in ``order`` (numbers from 1; unknown and repeated ones ignored), those
    it left out after them in their offline order, then the hits never shown."""
    shown = list(hits[:CANDIDATES])
    picked = list(dict.fromkeys(n - 1 for n in order if 1 <= n <= len(shown)))
    kept = [shown[n] for n in picked]
    return [*kept, *(hit for n, hit in enumerate(shown) if n not in set(picked)),
            *hits[CANDIDATES:]]


async def rerank(llm: Any, query: str, hits: Sequence[Hit], *,
                 deadline: float = DEADLINE) -> list[Hit]:
    """``hits`` reordered by ``llm`` (graphiti's ``LLMClient``); as given when it fails."""
    if len(hits) < 2:
        return list(hits)
    given = await bounded_answer(llm, INSTRUCTIONS, prompt(query, hits), RerankedOrder,
                                 max_tokens=MAX_ANSWER_TOKENS, deadline=deadline, log=log,
                                 skipped="rerank skipped, the offline ranking kept")
    return list(hits) if given is None else reordered(hits, given["order"])
