"""The newest read's property, for every store that reads newest first
(``backends.protocol.ReadsNewest``): ``newest`` is ``scan`` reversed, and the session-start
digest it feeds is what the reverse of a whole scan gave, to the byte."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from backends.model import Episode
from backends.protocol import MemoryBackend, ReadsNewest
from memory.agent.newest import newest_in_force
from memory.agent.validity import in_force
from memory.hooks import session_context

KINDS = ["gotcha", "pattern", "adr", "note"]
START = datetime(2026, 1, 1, tzinfo=UTC)
MEMORY = st.tuples(st.integers(0, 3), st.sampled_from(KINDS), st.sampled_from(["g0", "g1"]),
                   st.sampled_from([None, -1, 1]))  # (minute, kind, group, ended: days away)
FILTERS = {"kinds": st.lists(st.sampled_from(KINDS), min_size=1, max_size=3, unique=True),
           "limit": st.integers(0, 10)}
Memory = tuple[int, str, str, int | None]


def memory(n: int, minute: int, kind: str, group: str, ended: int | None) -> Episode:
    # Few minutes: many memories share a created_at, and their ids order them.
    return Episode.parse(
        id=f"ep-{n:02d}", group_id=group, kind=kind, name=f"memory {n}", body=f"body {n}",
        created_at=START + timedelta(minutes=minute),
        invalid_at=None if ended is None else datetime.now(UTC) + timedelta(days=ended))


class ScanOnly:
    """``store`` without its newest read: the session-start hook reverses a whole scan."""

    def __init__(self, store: MemoryBackend) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name == "newest":
            raise AttributeError(name)
        return getattr(self._store, name)


async def check_newest(store: MemoryBackend, kinds: list[str], limit: int) -> None:
    assert isinstance(store, ReadsNewest)
    scanned = [e async for e in store.scan(group_ids=["g0"], kinds=kinds)]
    assert [e async for e in store.newest(group_ids=["g0"], kinds=kinds)] == scanned[::-1]
    # What the session-start hook listed before it read the newest first.
    expected = [e for e in scanned if in_force(e)][::-1][:limit]
    assert await newest_in_force(store, ["g0"], kinds, limit) == expected
    scan_only: Any = ScanOnly(store)
    assert not isinstance(scan_only, ReadsNewest)
    assert await session_context(store, "g0") == await session_context(scan_only, "g0")
