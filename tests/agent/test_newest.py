"""The session-start digest's newest read: from the journal's index, newest first, it finds
what a scan of every memory of these kinds found (kept in force, reversed, cut to the limit)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from newest_property import FILTERS, MEMORY, Memory, check_newest, memory

from backends.protocol import upsert_all
from fallback import FileBackend


async def compare(root: Path, memories: list[Memory], kinds: list[str], limit: int) -> None:
    store = await FileBackend.open(root, watch=False)
    try:
        await upsert_all(store, [memory(n, *m) for n, m in enumerate(memories)])
        await check_newest(store, kinds, limit)
    finally:
        await store.aclose()


@settings(deadline=None, max_examples=15)
@given(memories=st.lists(MEMORY, max_size=80),  # over 32: the newest read's batches page
       **FILTERS)
def test_the_newest_read_finds_what_a_scan_found(
        memories: list[Memory], kinds: list[str], limit: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="dualmem-newest-"))
    try:
        asyncio.run(compare(root / "files", memories, kinds, limit))
    finally:
        shutil.rmtree(root, ignore_errors=True)
