"""What ``dualmem search --rerank`` sends the LLM at most: the worst case (more hits than are
shown, each longer than is shown, a long question) through graphiti's real OpenAI-compatible
client to the tests' scripted stand-in, which counts the request. Only the cost is measured:
a stand-in says nothing of an LLM's quality, and none is measured offline.

    python -m bench.rerank_cost
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from backends.graph import remote
from backends.model import Episode, Hit
from memory.store import rerank
from tests.graph.scripted_chat import ScriptedChat


class CountingChat(ScriptedChat):
    def __init__(self) -> None:
        super().__init__({"RerankedOrder": {"order": [1]}})
        self.requests: list[dict[str, Any]] = []

    def answer(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.requests.append(request)
        return super().answer(request)


def one_request(shape: str, answer: Any, ask: Callable[[Any], Awaitable[Any]]) -> dict[str, Any]:
    """The one request ``ask(llm)`` sends the counting stand-in, which answers ``answer`` to a
    request for ``shape``."""
    chat = CountingChat()
    chat.answers[shape] = answer
    try:
        asyncio.run(ask(remote.llm("m", url=chat.url, key="none")))
    finally:
        chat.close()
    [request] = chat.requests
    return request


def chars_sent(request: dict[str, Any]) -> int:
    return sum(len(message["content"]) for message in request["messages"])


def main() -> None:
    hits = [Hit(episode=Episode.create(group_id="g", kind="note", name="n", body="word " * 400),
                score=0.5, layer="file") for _ in range(2 * rerank.CANDIDATES)]
    request = one_request("RerankedOrder", {"order": [1]},
                          lambda llm: rerank.rerank(llm, "question " * 200, hits))
    chars = chars_sent(request)
    print(f"one rerank at most: {chars} characters sent (~{chars // 4} tokens at 4 a token; "
          f"{rerank.MAX_PROMPT_CHARS} of them dualmem's, the rest graphiti's answer schema), "
          f"answer capped at {request['max_tokens']} tokens, {rerank.DEADLINE:g} s deadline")


if __name__ == "__main__":
    main()
