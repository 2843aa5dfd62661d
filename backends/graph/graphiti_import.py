"""Importing graphiti: with telemetry off (graphiti reads the setting at import: nothing may
phone home) and its one import-time warning muted, and ``BackendUnavailable`` with an install
hint when it is not there."""

from __future__ import annotations

import importlib
import os
import warnings
from types import ModuleType

from backends.errors import BackendUnavailable


def import_graphiti(module: str, hint: str) -> ModuleType:
    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    try:
        # graphiti 0.31.1's models still use pydantic v1-style class Config, which pydantic
        # warns about at import: that one warning is graphiti's, not ours, so it alone is muted.
        from pydantic.warnings import PydanticDeprecatedSince20

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=PydanticDeprecatedSince20)
            return importlib.import_module(module)
    except ImportError as exc:
        raise BackendUnavailable("graph", "not installed", hint) from exc
