"""graphiti's own clients for a provider a user has, by name (``provider_names``): any
OpenAI-compatible endpoint (OpenAI itself, a local Ollama, vLLM, LM Studio, ...), Anthropic's
LLM, Gemini's embedder and LLM, Voyage's embedder. Importing this module imports graphiti and
openai; another provider's SDK is imported when its client is made (``dualmem[providers]``
brings them); nothing here runs unless a provider is configured.
"""

from __future__ import annotations

import importlib
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
from backends.graph.provider_names import DEFAULT

os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"  # before graphiti is imported: no phoning home
with warnings.catch_warnings():
    # graphiti 0.31.1's own models warn at import (graphiti_import.py says more).
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
OPENAI = ("openai", "ollama")
"""the providers of the OpenAI protocol"""


class RemoteEmbedder(Described):
    """graphiti's ``EmbedderClient`` as our ``Embedder``: its vectors, checked for size and
    L2-normalised; a failure of the endpoint is ``ProviderFailed``."""

    def __init__(self, client: EmbedderClient, model: str, dimension: int, *,
                 provider: str = DEFAULT,
                 errors: tuple[type[BaseException], ...] = (openai.OpenAIError,)) -> None:
        self.client = client
        # the OpenAI-compatible ones keep the name their vectors were recorded under
        self._name = f"{'openai-compatible' if provider in OPENAI else provider}:{model}"
        self._dimension = dimension
        self._errors = errors
        """the SDK's own failures of the endpoint (connection, status, timeout)"""

    async def aembed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for start in range(0, len(texts), CHUNK):
            # Endpoints refuse an empty input; such a text has no vector to find anyway.
            chunk = [text if text.strip() else "-" for text in texts[start : start + CHUNK]]
            try:
                rows = await self.client.create_batch(chunk)
            except self._errors as exc:
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


def embedder(model: str, *, provider: str = DEFAULT, url: str | None = None,
             key: str | None = None, dimension: int | None = None, http_client: Any = None,
             client: Any = None) -> RemoteEmbedder:
    """graphiti's embedder of ``provider`` for ``model``: ``OpenAIEmbedder`` at ``url``
    (None: OpenAI's), ``GeminiEmbedder``, ``VoyageAIEmbedder``. ``http_client``: an OpenAI
    SDK's ``AsyncClient``; ``client``: Gemini's or Voyage's own client (tests pass scripted
    ones)."""
    size = dimension or DEFAULT_DIMENSION
    if provider in OPENAI:
        config = OpenAIEmbedderConfig(embedding_model=model, api_key=key, base_url=url,
                                      embedding_dim=size)
        return RemoteEmbedder(OpenAIEmbedder(config, client=_client(url, key, http_client)),
                              model, size)
    if provider == "gemini":
        genai, errors = _sdk(provider, "google.genai"), _sdk(provider, "google.genai.errors")
        from graphiti_core.embedder.gemini import GeminiEmbedder, GeminiEmbedderConfig

        made = GeminiEmbedder(GeminiEmbedderConfig(embedding_model=model, api_key=key,
                                                   embedding_dim=size),
                              client=client or genai.Client(api_key=key))
        return RemoteEmbedder(made, model, size, provider=provider, errors=(errors.APIError,))
    if provider == "voyage":
        voyageai = _sdk(provider, "voyageai")
        from graphiti_core.embedder.voyage import VoyageAIEmbedder, VoyageAIEmbedderConfig

        voyage = VoyageAIEmbedder(VoyageAIEmbedderConfig(embedding_model=model, api_key=key,
                                                         embedding_dim=size))
        voyage.client = client or voyage.client
        return RemoteEmbedder(voyage, model, size, provider=provider,
                              errors=(voyageai.error.VoyageError,))
    raise ProviderFailed(f"{provider} has no embedder graphiti can use")


def llm(model: str, *, provider: str = DEFAULT, url: str | None = None, key: str | None = None,
        http_client: Any = None, client: Any = None) -> LLMClient:
    """graphiti's LLM client of ``provider``: ``OpenAIGenericClient`` (chat completions, which
    local servers speak), ``AnthropicClient`` (``http_client``: the Anthropic SDK's
    ``httpx.AsyncClient``), ``GeminiClient`` (``client``: a ``genai.Client``)."""
    config = LLMConfig(api_key=key, model=model, small_model=model, base_url=url)
    if provider in OPENAI:
        return OpenAIGenericClient(config, client=_client(url, key, http_client))
    if provider == "anthropic":
        anthropic = _sdk(provider, "anthropic")
        from graphiti_core.llm_client.anthropic_client import AnthropicClient

        return AnthropicClient(config, client=anthropic.AsyncAnthropic(
            api_key=key, http_client=http_client, timeout=TIMEOUT, max_retries=1))
    if provider == "gemini":
        genai = _sdk(provider, "google.genai")
        from graphiti_core.llm_client.gemini_client import GeminiClient

        return GeminiClient(config, client=client or genai.Client(api_key=key))
    raise ProviderFailed(f"{provider} has no LLM graphiti can use")


def _sdk(provider: str, module: str) -> Any:
    """The provider's SDK, or ``ProviderFailed`` saying how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ProviderFailed(f"{provider}: its SDK ({module}) is not installed: pip install "
                             "'dualmem[providers]'") from None


async def answer(client: LLMClient, instructions: str, text: str,
                 shape: type[BaseModel], *, max_tokens: int | None = None) -> dict[str, Any]:
    """What ``client`` answers to ``text`` under ``instructions``: one JSON object of ``shape``
    (graphiti asks the endpoint for it by the model's name and schema), in at most
    ``max_tokens`` (None: the client's default). ``ProviderFailed`` when the endpoint fails or
    its answer is not of that shape."""
    from graphiti_core.prompts.models import Message
    from pydantic import ValidationError

    try:
        given = await client.generate_response(
            [Message(role="system", content=instructions), Message(role="user", content=text)],
            response_model=shape, max_tokens=max_tokens)
        return shape.model_validate(given).model_dump()
    except ValidationError as exc:
        raise ProviderFailed(f"llm: the answer is not a {shape.__name__} ({exc.error_count()} "
                             "problems)") from exc
    except Exception as exc:  # graphiti's client raises its own, openai's and json's errors
        raise ProviderFailed(f"llm: {type(exc).__name__}: {exc}") from exc
