"""Importing graphiti: with telemetry off (graphiti reads the setting at import: nothing may
phone home) and its one import-time warning muted, and ``BackendUnavailable`` with an install
hint when it is not there."""

from __future__ import annotations

import contextlib
import importlib
import os
import warnings
from collections.abc import Iterator
from types import ModuleType

from backends.errors import BackendUnavailable


@contextlib.contextmanager
def importing_graphiti() -> Iterator[None]:
    """Around a module's first import of graphiti (no open of a graph imports it first)."""
    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    # graphiti 0.31.1's models still use pydantic v1-style class Config, which pydantic
    # warns about at import: that one warning is graphiti's, not ours, so it alone is muted.
    from pydantic.warnings import PydanticDeprecatedSince20

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=PydanticDeprecatedSince20)
        yield


def import_graphiti(module: str, hint: str) -> ModuleType:
    try:
        with importing_graphiti():
            return importlib.import_module(module)
    except ImportError as exc:
        raise BackendUnavailable("graph", "not installed", hint) from exc
