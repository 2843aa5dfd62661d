"""Regular expressions compiled on first use: a later Stop folds a turn or two, which meets few
of capture's many patterns nor the journal's rarer ones, and compiling each at import cost it
more than its folding (a pattern's compile is ~0.3-2M instructions)."""

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
