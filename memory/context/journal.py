"""Where the journal behind a store stands, so a cache can tell that something was written
since it read, by this process or any other: every write to the journal, from any process,
takes the next position (``backends.protocol.Journal``), and reading it is one indexed row."""

from __future__ import annotations

from backends.protocol import Journal, MemoryBackend, Position


def journal_of(store: MemoryBackend) -> Journal | None:
    """The journal ``store`` writes to: itself, or the one it keeps (``journal``) or stands in
    front of (``inner``); None for a layer without one (a graph alone)."""
    seen: object = store
    while seen is not None:
        if isinstance(seen, Journal):
            return seen
        seen = getattr(seen, "journal", None) or getattr(seen, "inner", None)
    return None


def position_of(journal: Journal | None) -> Position | None:
    return None if journal is None else journal.position()
