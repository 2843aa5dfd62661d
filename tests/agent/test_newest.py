"""The session-start digest's newest read: from the journal's index, newest first, it finds
what a scan of every memory of these kinds found (kept in force, reversed, cut to the limit)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from backends.model import Episode
from backends.protocol import ReadsNewest, upsert_all
from fallback import FileBackend
from memory.agent.newest import newest_in_force
from memory.agent.validity import in_force

KINDS = ["gotcha", "pattern", "adr", "note"]
START = datetime(2026, 1, 1, tzinfo=UTC)
MEMORY = st.tuples(st.integers(0, 3), st.sampled_from(KINDS), st.sampled_from(["g0", "g1"]),
                   st.sampled_from([None, -1, 1]))  # (minute, kind, group, ended: days away)


def memory(n: int, minute: int, kind: str, group: str, ended: int | None) -> Episode:
    # Few minutes: many memories share a created_at, and their ids order them.
    return Episode.parse(
        id=f"ep-{n:02d}", group_id=group, kind=kind, name=f"memory {n}", body=f"body {n}",
        created_at=START + timedelta(minutes=minute),
        invalid_at=None if ended is None else datetime.now(UTC) + timedelta(days=ended))


async def compare(root: Path, memories: list[tuple[int, str, str, int | None]],
                  kinds: list[str], limit: int) -> None:
    store = await FileBackend.open(root, watch=False)
    try:
        await upsert_all(store, [memory(n, *m) for n, m in enumerate(memories)])
        assert isinstance(store, ReadsNewest)
        scanned = [e async for e in store.scan(group_ids=["g0"], kinds=kinds)]
        assert [e async for e in store.newest(group_ids=["g0"], kinds=kinds)] == scanned[::-1]
        # What the session-start hook listed before it read the newest first.
        expected = [e for e in scanned if in_force(e)][::-1][:limit]
        assert await newest_in_force(store, ["g0"], kinds, limit) == expected
    finally:
        await store.aclose()


@settings(deadline=None, max_examples=15)
@given(memories=st.lists(MEMORY, max_size=80),  # over 32: the newest read's batches page
       kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=3, unique=True),
       limit=st.integers(0, 10))
def test_the_newest_read_finds_what_a_scan_found(
        memories: list[tuple[int, str, str, int | None]], kinds: list[str], limit: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="dualmem-newest-"))
    try:
        asyncio.run(compare(root / "files", memories, kinds, limit))
    finally:
        shutil.rmtree(root, ignore_errors=True)
