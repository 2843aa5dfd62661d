"""What a command produces: one JSON document for machines and a text for people; and an
error as the one line that reports it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Output:
    data: dict[str, Any]
    """The one JSON document printed with ``--json``."""
    text: str
    """What a person reads otherwise (nothing when empty)."""


def one_line(exc: BaseException) -> str:
    """The error's message on one line (its type's name when it has none)."""
    return " ".join(str(exc).split()) or type(exc).__name__
