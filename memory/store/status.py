"""What ``dualmem status`` reports: the layer in use and why, what it holds, what it cannot read,
and the last Auto-Claude import (from the migration ledger)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends.protocol import MemoryBackend, ReportsProblems, Restores, SetAside
from memory.store.damaged import DamagedCopy
from memory.store.damaged import find as find_damaged
from memory.store.selection import Selection


@dataclass(frozen=True)
class Status:
    home: Path
    layer: str
    reason: str
    groups: dict[str, int]
    problems: tuple[tuple[str, str], ...]
    """(path, reason) of each file that could not be read; it is left as it is."""
    last_import: dict[str, Any] | None = None
    """the report of the last Auto-Claude import, if any"""
    set_aside: tuple[SetAside, ...] = ()
    """what people took out of the views: held (still stored) or forgotten (text kept)"""
    damaged: tuple[DamagedCopy, ...] = ()
    """damaged copies of the graph kept (``memory.store.damaged``), newest first"""

    @property
    def total(self) -> int:
        return sum(self.groups.values())

    def to_json(self) -> dict[str, Any]:
        """The status; ``last_auto_claude_import`` only once there has been one."""
        status = {
            "home": str(self.home),
            "layer": self.layer,
            "reason": self.reason,
            "total": self.total,
            "groups": self.groups,
            "problems": [{"path": path, "reason": reason} for path, reason in self.problems],
        }
        if self.last_import is not None:
            status["last_auto_claude_import"] = self.last_import
        if self.set_aside:
            status["set_aside"] = [
                {"id": item.episode.id, "group": item.episode.group_id, "kind": item.episode.kind,
                 "text": item.episode.body, "since": item.since.isoformat(), "held": item.held}
                for item in self.set_aside]
        if self.damaged:
            status["damaged_copies"] = [
                {"path": str(copy.path), "since": copy.since.isoformat(), "bytes": copy.size}
                for copy in self.damaged]
        return status

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
        lines += _describe_set_aside(self.set_aside)
        if self.damaged:
            lines.append(f"damaged copies of the graph: {len(self.damaged)} kept "
                         "(how many or how long: dualmem config set keep-damaged 3|30d)")
            lines += [f"  {copy.path}  set aside {copy.since:%Y-%m-%d %H:%M} UTC, "
                      f"{copy.size} bytes" for copy in self.damaged]
        last = self.last_import
        if last is not None:
            lines.append(
                f"last Auto-Claude import: {last['started_at']}, {len(last['specs'])} spec(s) "
                f"from {last['path']}, wrote {last['written']}, {last['status']}"
                f"{'' if last['verified'] else ', FAILED verification'}"
            )
        return "\n".join(lines)


async def collect_status(
    backend: MemoryBackend, selection: Selection, home: Path, ledger_file: Path
) -> Status:
    counts: Counter[str] = Counter()
    async for episode in backend.scan():
        counts[episode.group_id] += 1
    problems = backend.problems if isinstance(backend, ReportsProblems) else ()
    set_aside = backend.set_aside() if isinstance(backend, Restores) else ()
    return Status(
        home=home,
        layer=selection.layer,
        reason=selection.reason,
        groups=dict(sorted(counts.items())),
        problems=tuple((str(path), reason) for path, reason in problems),
        last_import=_last_import(ledger_file),
        set_aside=tuple(set_aside),
        damaged=tuple(find_damaged(home)),
    )


_SHOWN = 10  # of each list; --json lists all


def _describe_set_aside(items: tuple[SetAside, ...]) -> list[str]:
    lines = []
    for held, title, hint in (
        (True, "held: {n} bullet(s) taken out of their view at once, still memories",
         "forget them as meant: dualmem delete {ids}; show one again: dualmem restore ID"),
        (False, "forgotten: {n} bullet(s) removed from their view (text kept)",
         "bring one back: dualmem restore ID"),
    ):
        chosen = [item for item in items if item.held is held]
        if not chosen:
            continue
        hint = hint.format(ids=" ".join(sorted(item.episode.id for item in chosen)))
        lines.append(title.format(n=len(chosen)))
        lines += [f"  {item.episode.id}  {item.episode.group_id}/{item.episode.kind}  "
                  f"{' '.join(item.episode.body.split())[:60]}" for item in chosen[:_SHOWN]]
        if len(chosen) > _SHOWN:
            lines.append(f"  and {len(chosen) - _SHOWN} more (status --json lists them)")
        lines.append(f"  {hint}")
    return lines


def _last_import(ledger_file: Path) -> dict[str, Any] | None:
    if not ledger_file.exists():  # no migration ever ran: nothing to open (or to create)
        return None
    from memory.importers import AUTO_CLAUDE  # the importer and the migrator: only then
    from migrate import Ledger

    ledger = Ledger.open(ledger_file)
    try:
        return ledger.last_run(AUTO_CLAUDE)
    finally:
        ledger.close()
