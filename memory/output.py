"""What a command produces: one JSON document for machines and a text for people."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Output:
    data: dict[str, Any]
    """The one JSON document printed with ``--json``."""
    text: str
    """What a person reads otherwise (nothing when empty)."""
