"""What the agent marked as learned in its own words: a line of a reply, outside code blocks,
that starts with a label (a bullet and bold are fine)::

    Gotcha: rename() is not atomic across file systems
    Pattern: write to a temp file, fsync, then rename
    Discovery: src/store.py: saves notes atomically

These are the agent's memories, not derived ones: they win over what capture derives."""

from __future__ import annotations

import re
from collections.abc import Iterator

from backends.lean_typing import TYPE_CHECKING
from backends.model import natural_key
from backends.patterns import lazy
from memory.capture.labels import LESSON_LABELS

if TYPE_CHECKING:
    from typing import Any

_LESSON = lazy(
    rf"^\s*(?:[-*+]\s+)?(?:\*\*|__)?({'|'.join(LESSON_LABELS)})(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*"
    r"(.+?)\s*$",
    re.IGNORECASE,
)
_DISCOVERY = lazy(r"^`?([^\s`:]+)`?\s*(?::|—|–|\s-)\s*(.+)$")
_FENCE = lazy(r"^\s*(```|~~~)")
_ANY_LABEL = lazy("|".join(LESSON_LABELS), re.IGNORECASE)
MAX_LESSONS = 200
"""per session: a transcript of thousands of labelled lines is not a session's lessons"""


class Lessons:
    """What a session marked as learned, each once, in the order first written."""

    def __init__(self, gotchas: list[str] | None = None, patterns: list[str] | None = None,
                 discoveries: dict[str, str] | None = None, over: int = 0) -> None:
        self.gotchas: list[str] = [] if gotchas is None else gotchas
        self.patterns: list[str] = [] if patterns is None else patterns
        self.discoveries: dict[str, str] = {} if discoveries is None else discoveries
        """path -> what it is for"""
        self.over = over
        """lessons left out past ``MAX_LESSONS``"""

    def __bool__(self) -> bool:
        return bool(self.gotchas or self.patterns or self.discoveries)

    def to_json(self) -> dict[str, Any]:
        return {"gotchas": list(self.gotchas), "patterns": list(self.patterns),
                "discoveries": dict(self.discoveries), "over": self.over}

    def __len__(self) -> int:
        return len(self.gotchas) + len(self.patterns) + len(self.discoveries)

    def add(self, label: str, text: str) -> None:
        if label == "discovery":
            found = _DISCOVERY().match(text)
            # a discovery that names no file says nothing a search can use
            if found and found.group(1) not in self.discoveries and self._room():
                self.discoveries[found.group(1)] = found.group(2)
            return
        items = self.gotchas if label == "gotcha" else self.patterns
        key = natural_key(text)
        if key and key not in map(natural_key, items) and self._room():
            items.append(text)

    def read(self, text: str) -> None:
        """Take the lessons of one reply."""
        if not _may_hold_a_label(text):
            return  # most replies
        for label, lesson in labelled_lines(text):
            self.add(label, lesson)

    def _room(self) -> bool:
        if len(self) < MAX_LESSONS:
            return True
        self.over += 1
        return False


def _may_hold_a_label(text: str) -> bool:
    if text.isascii():  # beyond ASCII, a case-blind match also meets letters like 'ſ' and 'ı'
        lower = text.lower()  # a few substring searches, where a pattern costs its compiling
        return any(label in lower for label in LESSON_LABELS)
    return bool(_ANY_LABEL().search(text))


def labelled_lines(text: str) -> Iterator[tuple[str, str]]:
    """(label, lesson) of each labelled line of ``text`` outside code blocks."""
    in_code = False
    for line in text.splitlines():
        if _FENCE().match(line):
            in_code = not in_code
        elif not in_code and (found := _LESSON().match(line)):
            yield found.group(1).lower(), found.group(2)
