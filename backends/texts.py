"""The text of a memory's list item, as every reader reads it; apart from ``insights`` so
that a reader that only shows memories (the tool hook's quick answer) imports nothing else."""

from __future__ import annotations

from collections.abc import Mapping

from backends import json_read
from backends.lean_typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


def item_text(item: Any, *keys: str) -> str:
    """The text of a list item that may be a string or a mapping (Auto-Claude writes both): the
    first of ``keys`` it has, else all its fields in key order, so the same item always reads
    (and is keyed) the same, whoever reads it."""
    if isinstance(item, Mapping):
        for key in keys:
            value = item.get(key)
            if isinstance(value, str | int) and str(value).strip():
                return str(value).strip()
        return "; ".join(f"{k}: {v}" for k, v in sorted(item.items()))
    return str(item).strip()


def json_body(body: str) -> Any:
    """A memory's body parsed as JSON (``json_read``: no orjson on a read), or None for plain
    text (or text that only looks like JSON)."""
    if not body.lstrip().startswith(("{", "[")):
        return None
    try:
        return json_read.loads(body)
    except (ValueError, RecursionError):  # orjson's JSONDecodeError is a ValueError
        return None
