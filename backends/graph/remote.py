"""graphiti's own clients for a provider a user has: any OpenAI-compatible endpoint (OpenAI
itself, a local Ollama at ``http://localhost:11434/v1``, vLLM, LM Studio, ...). Importing this
module imports graphiti and openai; nothing here runs unless a provider is configured.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import openai
from pydantic import BaseModel
from pydantic.warnings import PydanticDeprecatedSince20

from backends.errors import ProviderFailed
from backends.graph.embedder import Described, Vectors

os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"  # before graphiti is imported: no phoning home
with warnings.catch_warnings():
    # graphiti 0.31.1's own models warn at import (database._graphiti_schema says more).
    warnings.filterwarnings("ignore", category=PydanticDeprecatedSince20)
    from graphiti_core.embedder.client import EmbedderClient
    from graphiti_core.embedder.openai import OpenAIEmbedder, OpenAIEmbedderConfig
    from graphiti_core.llm_client.client import LLMClient
    from graphiti_core.llm_client.config import LLMConfig
    from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient

DEFAULT_DIMENSION = 1024
"""graphiti's own default (``EMBEDDING_DIM``)"""
CHUNK = 64
"""texts per request: endpoints cap a request's inputs"""
TIMEOUT = 30.0


class RemoteEmbedder(Described):
    """graphiti's ``EmbedderClient`` as our ``Embedder``: its vectors, checked for size and
    L2-normalised; a failure of the endpoint is ``ProviderFailed``."""

    def __init__(self, client: EmbedderClient, model: str, dimension: int) -> None:
        self.client = client
        self._name = f"openai-compatible:{model}"
        self._dimension = dimension

    async def aembed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for start in range(0, len(texts), CHUNK):
            # Endpoints refuse an empty input; such a text has no vector to find anyway.
            chunk = [text if text.strip() else "-" for text in texts[start : start + CHUNK]]
            try:
                rows = await self.client.create_batch(chunk)
            except openai.OpenAIError as exc:  # connection, status and timeout errors alike
                raise ProviderFailed(f"embedder {self._name}: {exc}") from exc
            if len(rows) != len(chunk) or any(len(row) != self._dimension for row in rows):
                got = {len(row) for row in rows}
                raise ProviderFailed(f"embedder {self._name}: {len(rows)} vectors of size "
                                     f"{sorted(got)} for {len(chunk)} texts; expected size "
                                     f"{self._dimension} (DUALMEM_EMBEDDER_DIMENSION)")
            out[start : start + len(chunk)] = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        normalised: Vectors = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
        return normalised


def _client(url: str | None, key: str | None, http_client: Any) -> Any:
    """``http_client``: the SDK's own ``AsyncClient`` type (tests pass a scripted transport)."""
    try:
        # A local endpoint takes any key, but the SDK wants one.
        return openai.AsyncOpenAI(api_key=key or ("none" if url else None), base_url=url,
                                  http_client=http_client, timeout=TIMEOUT, max_retries=1)
    except openai.OpenAIError as exc:  # no key for OpenAI's own endpoint
        raise ProviderFailed(str(exc)) from exc


def embedder(model: str, *, url: str | None = None, key: str | None = None,
             dimension: int | None = None,
             http_client: Any = None) -> RemoteEmbedder:
    """graphiti's ``OpenAIEmbedder`` for ``model`` at ``url`` (None: OpenAI's)."""
    size = dimension or DEFAULT_DIMENSION
    config = OpenAIEmbedderConfig(embedding_model=model, api_key=key, base_url=url,
                                  embedding_dim=size)
    return RemoteEmbedder(OpenAIEmbedder(config, client=_client(url, key, http_client)),
                          model, size)


def llm(model: str, *, url: str | None = None, key: str | None = None,
        http_client: Any = None) -> LLMClient:
    """graphiti's ``OpenAIGenericClient`` (chat completions, which local servers speak)."""
    config = LLMConfig(api_key=key, model=model, small_model=model, base_url=url)
    return OpenAIGenericClient(config, client=_client(url, key, http_client))


async def answer(client: LLMClient, instructions: str, text: str,
                 shape: type[BaseModel]) -> dict[str, Any]:
    """What ``client`` answers to ``text`` under ``instructions``: one JSON object of ``shape``
    (graphiti asks the endpoint for it by the model's name and schema). ``ProviderFailed`` when
    the endpoint fails or its answer is not of that shape."""
    from graphiti_core.prompts.models import Message
    from pydantic import ValidationError

    try:
        given = await client.generate_response(
            [Message(role="system", content=instructions), Message(role="user", content=text)],
            response_model=shape)
        return shape.model_validate(given).model_dump()
    except ValidationError as exc:
        raise ProviderFailed(f"llm: the answer is not a {shape.__name__} ({exc.error_count()} "
                             "problems)") from exc
    except Exception as exc:  # graphiti's client raises its own, openai's and json's errors
        raise ProviderFailed(f"llm: {type(exc).__name__}: {exc}") from exc
