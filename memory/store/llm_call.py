"""One bounded question to the configured LLM, where an offline answer stands ready: a
search's rerank (``memory.store.rerank``) and the areas a task will touch
(``memory.store.area_guess``). The call has a deadline and its answer a token cap; whatever
goes wrong (no answer in time, a failing endpoint, an answer not of the shape asked) is
None, said in one line on the caller's logger at INFO (what ``--verbose`` shows), and the
caller keeps its offline answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from backends.errors import ProviderFailed


async def bounded_answer(llm: Any, instructions: str, text: str, shape: type[BaseModel], *,
                         max_tokens: int, deadline: float, log: logging.Logger,
                         skipped: str) -> dict[str, Any] | None:
    """What ``llm`` (graphiti's ``LLMClient``) answers in ``shape`` within ``deadline``
    seconds and ``max_tokens``; None when it does not, said on ``log`` as ``skipped: why``."""
    from backends.graph.remote import answer

    # graphiti's client logs its failures as errors: shown only where the caller's are.
    client_log = logging.getLogger("graphiti_core.llm_client")
    level = client_log.level
    if not log.isEnabledFor(logging.INFO):
        client_log.setLevel(logging.CRITICAL)
    try:
        return await asyncio.wait_for(
            answer(llm, instructions, text, shape, max_tokens=max_tokens), deadline)
    except (ProviderFailed, TimeoutError) as exc:
        log.info("%s: %s", skipped, str(exc) or f"no answer within {deadline:g} s")
        return None
    finally:
        client_log.setLevel(level)


def cut(text: str, chars: int) -> str:
    """``text`` on one line, at most ``chars`` long."""
    return " ".join(text.split())[:chars]


def numbered(texts: Sequence[str], count: int, chars: int) -> list[str]:
    """The first ``count`` of ``texts``, one a line, each ``cut`` to ``chars`` and numbered
    from 1 (``[1] ...``): an answer names them by number, never by text."""
    return [f"[{n}] {cut(text, chars)}" for n, text in enumerate(texts[:count], 1)]
