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
        *, model: str | None = None,
    ) -> dict[str, Any]:
        self.calls.append(messages)
        if not self.script:
            raise AssertionError("the scripted LLM has no answer left")
        return self.script.pop(0)


class OrderKeepingReranker(CrossEncoderClient):
    async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
        return [(passage, 1.0 - n / (len(passages) + 1)) for n, passage in enumerate(passages)]


class ScriptedEndpoint:
    """An OpenAI-compatible endpoint answered in process (an ``httpx2`` transport the openai
    SDK sends through, so graphiti's real clients run): ``/embeddings`` answers with the
    built-in embedder's vectors at ``dimension``; ``failing`` makes every call a 503."""

    def __init__(self, dimension: int) -> None:
        import httpx2

        from backends.graph import HashingEmbedder

        self.embedder = HashingEmbedder(dimension)
        self.inputs: list[str] = []
        self.failing = False
        self.client = httpx2.AsyncClient(transport=httpx2.MockTransport(self._answer))

    def _answer(self, request: Any) -> Any:
        import httpx2
        import orjson

        if self.failing:
            return httpx2.Response(503, json={"error": {"message": "overloaded"}})
        assert request.url.path.endswith("/embeddings"), request.url
        texts = orjson.loads(request.content)["input"]
        self.inputs += texts
        vectors = self.embedder.embed(texts)
        return httpx2.Response(200, json={
            "object": "list", "model": "scripted",
            "data": [{"object": "embedding", "index": n, "embedding": v.tolist()}
                     for n, v in enumerate(vectors)],
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        })



class ScriptedAnthropic:
    """Anthropic's Messages API answered in process (an ``httpx`` transport the anthropic SDK
    sends through, so graphiti's ``AnthropicClient`` runs): each call gets the next scripted
    object as the tool call graphiti asked for."""

    def __init__(self, script: list[dict[str, Any]]) -> None:
        import httpx

        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.client = httpx.AsyncClient(transport=httpx.MockTransport(self._answer))

    def _answer(self, request: Any) -> Any:
        import httpx
        import orjson

        assert request.url.path.endswith("/messages"), request.url
        asked = orjson.loads(request.content)
        self.requests.append(asked)
        return httpx.Response(200, json={
            "id": "msg_1", "type": "message", "role": "assistant", "model": asked["model"],
            "content": [{"type": "tool_use", "id": "tool_1", "name": asked["tools"][0]["name"],
                         "input": self.script.pop(0)}],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 2},
        })


class ScriptedGemini:
    """A ``genai.Client`` answered in process (``client.aio.models``): embeddings are the
    built-in embedder's vectors at ``dimension``, answers the next scripted JSON text, in the
    SDK's own response types."""

    def __init__(self, dimension: int, script: list[str] | None = None) -> None:
        from backends.graph import HashingEmbedder

        self.embedder = HashingEmbedder(dimension)
        self.script = list(script or [])
        self.inputs: list[str] = []
        self.aio = self
        self.models = self

    async def embed_content(self, *, model: str, contents: list[str], config: Any) -> Any:
        from google.genai import types

        self.inputs += contents
        return types.EmbedContentResponse(embeddings=[
            types.ContentEmbedding(values=row.tolist()) for row in self.embedder.embed(contents)])

    async def generate_content(self, *, model: str, contents: Any, config: Any) -> Any:
        from google.genai import types

        return types.GenerateContentResponse(candidates=[types.Candidate(content=types.Content(
            role="model", parts=[types.Part(text=self.script.pop(0))]))])


class ScriptedVoyage:
    """A ``voyageai.AsyncClient`` answered in process: the built-in embedder's vectors;
    ``failing`` raises the SDK's own error, as an endpoint that is down does."""

    def __init__(self, dimension: int) -> None:
        from backends.graph import HashingEmbedder

        self.embedder = HashingEmbedder(dimension)
        self.inputs: list[str] = []
        self.failing = False

    async def embed(self, texts: list[str], model: str | None = None, **_: Any) -> Any:
        import voyageai.error
        from voyageai.object.embeddings import EmbeddingsObject

        if self.failing:
            raise voyageai.error.ServiceUnavailableError("overloaded")  # type: ignore[no-untyped-call]
        self.inputs += texts
        answer = EmbeddingsObject()
        answer.embeddings = [row.tolist() for row in self.embedder.embed(texts)]
        return answer
