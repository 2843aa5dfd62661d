"""What a capture kept, by kind, and what the store refused: counted, and said in one line."""

from __future__ import annotations

from backends.kinds import CODEBASE_DISCOVERY, GOTCHA, PATTERN, SESSION_INSIGHT, TASK_OUTCOME

_NAMES: dict[str, str | tuple[str, str]] = {
    CODEBASE_DISCOVERY: ("file discovery", "file discoveries"),
    SESSION_INSIGHT: "session insight", TASK_OUTCOME: "task outcome", "lesson": "lesson"}
_ORDER = {SESSION_INSIGHT: 0, TASK_OUTCOME: 1, CODEBASE_DISCOVERY: 2, GOTCHA: 3, PATTERN: 4}


class Kept:
    """What one capture wrote, by kind, and what it could not."""

    def __init__(self, kinds: dict[str, int] | None = None,
                 refused: list[str] | None = None) -> None:
        self.kinds: dict[str, int] = {} if kinds is None else kinds
        self.refused: list[str] = [] if refused is None else refused

    def add(self, kind: str) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def merge(self, other: Kept) -> None:
        for kind, count in other.kinds.items():
            self.kinds[kind] = self.kinds.get(kind, 0) + count
        self.refused += other.refused

    def describe(self) -> str:
        """``session insight, 3 file discoveries, 1 gotcha`` (empty when nothing)."""
        parts = []
        for kind, count in sorted(self.kinds.items(), key=lambda item: _ORDER.get(item[0], 9)):
            name = _NAMES.get(kind, kind.replace("_", " "))
            parts.append(f"{count} {name[count > 1]}" if isinstance(name, tuple)
                         else f"{count} {name}{'s' if count > 1 else ''}")
        return ", ".join(parts)
