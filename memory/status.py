"""What ``dualmem status`` reports: the layer in use and why, what it holds, what it cannot read."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends.protocol import MemoryBackend
from memory.selection import Selection


@dataclass(frozen=True)
class Status:
    home: Path
    layer: str
    reason: str
    groups: dict[str, int]
    problems: tuple[tuple[str, str], ...]
    """(path, reason) of each file that could not be read; it is left as it is."""

    @property
    def total(self) -> int:
        return sum(self.groups.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "home": str(self.home),
            "layer": self.layer,
            "reason": self.reason,
            "total": self.total,
            "groups": self.groups,
            "problems": [{"path": path, "reason": reason} for path, reason in self.problems],
        }

    def describe(self) -> str:
        lines = [
            f"home:   {self.home}",
            f"layer:  {self.layer} ({self.reason})",
            f"stored: {self.total} episode(s) in {len(self.groups)} group(s)",
        ]
        lines += [f"  {group}: {count}" for group, count in self.groups.items()]
        if self.problems:
            lines.append(f"problems: {len(self.problems)} file(s) could not be read")
            lines += [f"  {path}: {reason}" for path, reason in self.problems]
        return "\n".join(lines)


async def collect_status(backend: MemoryBackend, selection: Selection, home: Path) -> Status:
    counts: Counter[str] = Counter()
    async for episode in backend.scan():
        counts[episode.group_id] += 1
    # Not part of the protocol: only layers that can meet unreadable files list them.
    problems = getattr(backend, "problems", ())
    return Status(
        home=home,
        layer=selection.layer,
        reason=selection.reason,
        groups=dict(sorted(counts.items())),
        problems=tuple((str(path), reason) for path, reason in problems),
    )
