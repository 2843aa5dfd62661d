"""The providers a user can name, ``NAME:MODEL[@URL]`` (``dualmem config set embedder
voyage:voyage-3``): what each makes, the variable its key is read from, and its endpoint. Only
names here: graphiti's clients for them are made in ``remote``, and their SDKs are imported
only when one is configured."""

from __future__ import annotations

from backends.lean_typing import NamedTuple

OLLAMA_URL = "http://localhost:11434/v1"


class Named(NamedTuple):
    embeds: bool
    answers: bool
    """an LLM: extraction in the background, and the query-time uses"""
    key_variable: str | None
    """the provider's own variable for its key; None: a local endpoint, no key"""
    url: str | None = None
    """its endpoint when none is given (None: the SDK's own)"""
    takes_url: bool = False
    """whether ``@URL`` may name another endpoint of the same protocol"""
    sdk: str | None = None
    """graphiti's extra that brings its SDK (None: installed with dualmem)"""


NAMED = {
    "openai": Named(embeds=True, answers=True, key_variable="OPENAI_API_KEY", takes_url=True),
    "ollama": Named(embeds=True, answers=True, key_variable=None, url=OLLAMA_URL,
                    takes_url=True),
    "anthropic": Named(embeds=False, answers=True, key_variable="ANTHROPIC_API_KEY",
                       sdk="anthropic"),
    "gemini": Named(embeds=True, answers=True, key_variable="GOOGLE_API_KEY",
                    sdk="google-genai"),
    "voyage": Named(embeds=True, answers=False, key_variable="VOYAGE_API_KEY",
                    sdk="voyageai"),
}
"""``openai`` (the default when no name is given) is any OpenAI-compatible endpoint"""
DEFAULT = "openai"
