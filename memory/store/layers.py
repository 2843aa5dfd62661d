"""What a store made of two layers (the dual store) reports, as small optional protocols.

Code above the store asks "does this store have layers?" with ``isinstance(store, Layered)``
instead of naming the class, so the command line needs neither the dual store's module nor its
dependencies to report or repair.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable


class DualStatus(NamedTuple):
    """Where reads are answered now and why, what waits for the graph, the last migration."""

    layer: str
    reason: str
    pending: int
    """changes of the journal the graph has not taken in yet (for a process that does not hold
    the graph: since the position its holder last recorded), and episodes it refused"""
    skipped: tuple[str, ...]
    """journal episodes the graph refused, with the reason (holder only)"""
    journal: int
    """episodes in the journal"""
    last_migration: dict[str, Any] | None
    unreadable: tuple[str, ...]
    server: str | None = None
    """the graph server's address (password masked), when the graph is on one"""
    reachable: bool = False
    """whether that server answered this process"""

    def to_json(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "reason": self.reason,
            "pending": self.pending,
            "skipped": list(self.skipped),
            "journal": self.journal,
            "last_migration": self.last_migration,
            "unreadable": list(self.unreadable),
        } | ({} if self.server is None else {"server": self.server,
                                              "reachable": self.reachable})

    def describe(self) -> str:
        lines = [f"journal: {self.journal} episode(s); changes not yet in the graph: "
                 f"{self.pending}"]
        if self.server is not None:
            lines[0] = (f"graph server {self.server}: "
                        f"{'reachable' if self.reachable else 'not reachable'}\n"
                        f"journal: {self.journal} episode(s); this home's changes not yet on "
                        f"the server: {self.pending}")
        lines += [f"  the graph refused {line}" for line in self.skipped]
        last = self.last_migration
        if last is None:
            lines.append("last migration: none")
        else:
            verdict = "ok" if last["ok"] else "FAILED verification"
            lines.append(
                f"last migration: {last['started_at']}, wrote {last['written']}, "
                f"deleted {last['deleted']}, {verdict}"
            )
        return "\n".join(lines)


class Verdict(NamedTuple):
    """What making the graph equal to the journal did (or, from ``differences``, would do)."""

    written: int
    """journal episodes the graph lacked or held otherwise"""
    deleted: int
    """graph episodes the journal records as deleted"""
    joined: int
    """graph episodes the journal lacked, written into it"""

    @property
    def changed(self) -> bool:
        return bool(self.written or self.deleted or self.joined)

    def to_json(self) -> dict[str, int]:
        return {"written": self.written, "deleted": self.deleted, "joined": self.joined}


@runtime_checkable
class Layered(Protocol):
    """A store over a journal and an index: it reports what waits between them and can make
    the index equal to the journal again (when it holds the index)."""

    @property
    def holds_graph(self) -> bool: ...

    @property
    def reason(self) -> str:
        """why reads are answered where they are"""

    async def status(self) -> DualStatus: ...

    async def repair(self, *, graphiti_indexes: bool = False) -> Verdict: ...

    async def differences(self) -> Verdict: ...
