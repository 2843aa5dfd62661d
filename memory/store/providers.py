"""The graph's embedder and LLM as configured: graphiti's own clients for a user's provider
(``backends.graph.remote``), else the built-in offline embedder and no LLM. The clients are
made only when a provider is configured, so the offline default imports no SDK."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory.store.config import LOCAL, Config

if TYPE_CHECKING:
    from backends.graph.embedder import AnyEmbedder


def embedder_for(config: Config) -> AnyEmbedder | None:
    """graphiti's embedder for ``config.embedder``; None: the graph's built-in one."""
    if config.embedder is None:
        return None
    given = config.embedder
    if given.model.startswith(LOCAL):
        from backends.graph import local_model

        return local_model.embedder(given.model.removeprefix(LOCAL), dimension=given.dimension)
    from backends.graph import remote

    return remote.embedder(given.model, provider=given.provider, url=given.url, key=given.key,
                           dimension=given.dimension)


def llm_for(config: Config) -> Any | None:
    """graphiti's ``LLMClient`` for ``config.llm``, or None."""
    if config.llm is None:
        return None
    from backends.graph import remote

    given = config.llm
    return remote.llm(given.model, provider=given.provider, url=given.url, key=given.key)
