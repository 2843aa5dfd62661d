"""Scripted stand-ins for a remote LLM and reranker (the only doubles the tests allow): they
answer from a script and never touch the network."""

from __future__ import annotations

from typing import Any

from graphiti_core.cross_encoder.client import CrossEncoderClient
from graphiti_core.llm_client.client import LLMClient
from graphiti_core.llm_client.config import DEFAULT_MAX_TOKENS, LLMConfig, ModelSize
from graphiti_core.prompts.models import Message
from pydantic import BaseModel


class ScriptedLLM(LLMClient):
    """Answers each call with the next scripted response; fails a test that calls it more."""

    def __init__(self, script: list[dict[str, Any]] | None = None) -> None:
        super().__init__(LLMConfig(api_key="none", base_url="http://127.0.0.1:9"))
        self.script = list(script or [])
        self.calls: list[list[Message]] = []

    async def _generate_response(
        self, messages: list[Message], response_model: type[BaseModel] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS, model_size: ModelSize = ModelSize.medium,
    ) -> dict[str, Any]:
        self.calls.append(messages)
        if not self.script:
            raise AssertionError("the scripted LLM has no answer left")
        return self.script.pop(0)


class OrderKeepingReranker(CrossEncoderClient):
    async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
        return [(passage, 1.0 - n / (len(passages) + 1)) for n, passage in enumerate(passages)]
