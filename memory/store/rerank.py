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

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from backends.errors import ProviderFailed
from backends.model import Hit

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
    shown = [f"[{n}] {' '.join(hit.episode.body.split())[:PASSAGE_CHARS]}"
             for n, hit in enumerate(hits[:CANDIDATES], 1)]
    return "\n".join([f"Question: {' '.join(query.split())[:QUERY_CHARS]}", *shown])


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
    from backends.graph.remote import answer

    if len(hits) < 2:
        return list(hits)
    # graphiti's client logs its failures as errors: shown only where ours is (--verbose).
    client_log = logging.getLogger("graphiti_core.llm_client")
    level = client_log.level
    if not log.isEnabledFor(logging.INFO):
        client_log.setLevel(logging.CRITICAL)
    try:
        given = await asyncio.wait_for(
            answer(llm, INSTRUCTIONS, prompt(query, hits), RerankedOrder,
                   max_tokens=MAX_ANSWER_TOKENS), deadline)
    except (ProviderFailed, TimeoutError) as exc:
        log.info("rerank skipped, the offline ranking kept: %s",
                 str(exc) or f"no answer within {deadline:g} s")
        return list(hits)
    finally:
        client_log.setLevel(level)
    return reordered(hits, given["order"])
