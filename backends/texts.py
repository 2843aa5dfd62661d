"""The text of a memory's list item, as every reader reads it; apart from ``insights`` so
that a reader that only shows memories (the tool hook's quick answer) imports nothing else."""

from __future__ import annotations

from collections.abc import Callable, Mapping
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


def json_body(body: str, loads: Callable[[str], Any]) -> Any:
    """A memory's body parsed as JSON by ``loads``, or None for plain text (or text that only
    looks like JSON). The parser is the caller's: orjson, or the standard library's where a
    lean reader would rather not import it."""
    if not body.lstrip().startswith(("{", "[")):
        return None
    try:
        return loads(body)
    except (ValueError, RecursionError):  # orjson's JSONDecodeError is a ValueError
        return None
