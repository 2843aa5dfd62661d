"""What a command produces: one JSON document for machines and a text for people; and an
error as the one line that reports it."""

from __future__ import annotations

from typing import Any, NamedTuple


class Output(NamedTuple):
    data: dict[str, Any]
    """The one JSON document printed with ``--json``."""
    text: str
    """What a person reads otherwise (nothing when empty)."""
    exit_code: int = 0
    """0, or ``PARTIAL_EXIT`` when the command did its work only in part"""


PARTIAL_EXIT = 3
"""the exit status of a command that did its work only in part (an Auto-Claude import that
skipped damaged files or refused memories), its output printed as usual"""


def one_line(exc: BaseException) -> str:
    """The error's message on one line (its type's name when it has none), printable."""
    return printable(" ".join(str(exc).split()) or type(exc).__name__)


def printable(text: str) -> str:
    """``text`` with any lone surrogate (a byte of the command line that is not UTF-8) shown as
    an escape, so that it can be printed and put in JSON."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
