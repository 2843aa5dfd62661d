"""What dualmem says of itself: its version, as installed."""

from __future__ import annotations


def version() -> str:
    """The installed distribution's version ("unknown" when run from a bare checkout)."""
    from importlib import metadata  # ~3 ms: only --version and the MCP server ask

    try:
        return metadata.version("dualmem")
    except metadata.PackageNotFoundError:
        return "unknown"
