"""A one-shot process (a search, a hook, ``context``) on an ``auto`` home opens the journal
alone: no dual store, no graph lock, no watcher. Its writes are the journal's; the graph's next
holder indexes them."""

from __future__ import annotations

from pathlib import Path

from backends.model import Episode
from fallback import FileBackend
from memory.store.config import Config
from memory.store.dual import DualBackend
from memory.store.selection import open_backend, open_memory

GROUP = "proj"


async def test_a_one_shot_process_opens_the_journal_alone_and_the_next_holder_indexes_it(
    tmp_path: Path,
) -> None:
    config = Config(home=tmp_path)
    store, selection = await open_backend(config, one_shot=True)
    try:
        assert type(store) is FileBackend  # the dual store's wrappers do nothing here
        assert (selection.layer, "one-shot" in selection.reason) == ("file", True)
        memory = Episode.create(group_id=GROUP, kind="note", key="k", name="one shot",
                                body="written by a one-shot process")
        await store.upsert(memory)
    finally:
        await store.aclose()
    async with open_memory(tmp_path, "auto") as holder:
        assert isinstance(holder, DualBackend)
        await holder.catch_up()
        assert holder.layer_in_use == "graph"
        assert await holder.get(memory.id) == memory
