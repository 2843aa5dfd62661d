"""A one-line progress bar for long CLI commands, drawn only when the stream is a terminal."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

_WIDTH = 30
_REDRAW_SECONDS = 0.1


class Progress:
    """``with Progress("import", total) as bar: bar.advance()``; silent off a terminal, so
    piped output and logs stay clean."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = max(total, 0)
        self.done = 0
        self._stream = sys.stderr if stream is None else stream
        self._enabled = self._stream.isatty()
        self._drawn_at = 0.0

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        now = time.monotonic()
        if self._enabled and (now - self._drawn_at >= _REDRAW_SECONDS or self.done >= self.total):
            self._drawn_at = now
            self._draw()

    def _draw(self) -> None:
        share = self.done / self.total if self.total else 1.0
        filled = round(_WIDTH * min(share, 1.0))
        self._stream.write(
            f"\r{self.label} [{'#' * filled}{'.' * (_WIDTH - filled)}] {self.done}/{self.total}"
        )
        self._stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._enabled:
            self._draw()
            self._stream.write("\n")
            self._stream.flush()
