"""Regular expressions compiled on first use: a Stop folds a turn or two, which meets few of
capture's many patterns, and compiling them all at import cost it more than its folding."""

from __future__ import annotations

import re
from collections.abc import Callable


def lazy(pattern: str, flags: int = 0) -> Callable[[], re.Pattern[str]]:
    """``re.compile(pattern, flags)``, compiled at the first call and kept."""
    compiled: list[re.Pattern[str]] = []

    def get() -> re.Pattern[str]:
        if not compiled:
            compiled.append(re.compile(pattern, flags))
        return compiled[0]

    return get
