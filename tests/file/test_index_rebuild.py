"""The file layer's index is a cache of the files: kept current step by step (writes through the
API, files added, rewritten and removed by hand between opens), it answers exactly as an index
built again from the files, and holds the same entities, mentions and facts."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.model import Episode, natural_key, stable_id
from fallback import FileBackend, codec
from fallback.index import FILE as INDEX_FILE
from fallback.index import FileIndex
from fallback.layout import Layout

WORDS = ["graph", "lock", "kuzu", "journal", "index", "agent", "memory", "view", "deadline",
         # entities: a pattern naming two of them states a fact
         "src/lock.py", "`JournalIndex`", "kuzu.database"]
ENTITY_TABLES = ("ent_entities", "ent_terms", "ent_mentions", "ent_facts", "thr_turns")
STEP = st.tuples(
    st.sampled_from(["api put", "api delete", "hand write", "hand delete", "reopen"]),
    st.integers(0, 5),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
    st.sampled_from(["note", "pattern", "dialog_turn"]),  # turns: their order is kept too
)


def episode(n: int, text: str, kind: str) -> Episode:
    return Episode.parse(id=f"ep-{n}", group_id=f"g{n % 2}", kind=kind, name=f"memory {n}",
                         body=text, created_at=datetime(2026, 1, 1, tzinfo=UTC)
                         + timedelta(minutes=n))


async def answers(store: FileBackend, root: Path) -> tuple[object, ...]:
    queries = [" ".join(WORDS[i : i + 2]) for i in range(0, 8, 2)]
    searches = [await store.search(query, limit=20)
                for query in [*queries, "what breaks in src/lock.py", "journal index"]]
    return (
        [e async for e in store.scan()],
        await store.count(group_ids=["g0"]),
        [[(h.episode.id, round(h.score, 12)) for h in hits] for hits in searches],
        [await store.get(f"ep-{n}") for n in range(6)],
        entity_rows(root),
    )


def entity_rows(root: Path) -> dict[str, list[tuple[object, ...]]]:
    db = sqlite3.connect(root / INDEX_FILE)
    try:
        return {table: sorted(db.execute(f"SELECT * FROM {table}").fetchall())
                for table in ENTITY_TABLES}
    finally:
        db.close()


def forget_index(root: Path) -> None:
    for leftover in root.glob(INDEX_FILE + "*"):
        leftover.unlink()


async def play(root: Path, steps: list[tuple[str, int, str, str]]) -> None:
    layout = Layout(root)
    store = await FileBackend.open(root, watch=False)
    try:
        for action, n, text, kind in steps:
            if action == "api put":
                await store.upsert(episode(n, text, kind))
            elif action == "api delete":
                await store.delete(f"ep-{n}")
            elif action == "hand write":
                path = layout.episode_path(f"g{n % 2}", f"ep-{n}")
                path.parent.mkdir(parents=True, exist_ok=True)
                # As git and an editor's safe save do: a new file renamed over the old. An edit
                # in place while no process watches is taken in later (FORMAT.md, The index).
                temporary = path.with_name("edit.tmp")
                temporary.write_bytes(codec.encode(episode(n, text, kind)))
                temporary.replace(path)
            elif action == "hand delete":
                layout.episode_path(f"g{n % 2}", f"ep-{n}").unlink(missing_ok=True)
            else:
                await store.aclose()
                store = await FileBackend.open(root, watch=False)
        await store.aclose()
        store = await FileBackend.open(root, watch=False)  # takes in the last hand edits
        kept = await answers(store, root)
    finally:
        await store.aclose()
    forget_index(root)
    rebuilt = await FileBackend.open(root, watch=False)
    try:
        assert await answers(rebuilt, root) == kept
    finally:
        await rebuilt.aclose()


# `make test` tries 20 sequences of steps, `make slow` the full 40: the same property.
@pytest.mark.parametrize("examples", [20, pytest.param(40, marks=pytest.mark.slow)])
def test_an_index_kept_current_answers_as_one_built_from_the_files(examples: int) -> None:
    settings(deadline=None, max_examples=examples)(
        given(steps=st.lists(STEP, max_size=25))(_index_answers))()


def _index_answers(steps: list[tuple[str, int, str, str]]) -> None:
    root = Path(tempfile.mkdtemp(prefix="dualmem-index-"))
    try:
        asyncio.run(play(root / "files", steps))
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def test_a_manual_memory_ending_like_a_dualmem_comment_keeps_its_id(tmp_path: Path) -> None:
    # Shown as a plain hand bullet, it read back as an edited generated bullet: another text,
    # another id, and the memory itself was deleted, once the view was read without its index
    # (or after a person's next edit of the view).
    root = tmp_path / "files"
    body = "keep it <!-- dualmem abc 0123456789 -->"
    memory = Episode.parse(id=stable_id("g", "pattern", natural_key(body)), group_id="g",
                           kind="pattern", name=body, body=body, source="manual")
    store = await FileBackend.open(root, watch=False)
    await store.upsert(memory)
    await store.aclose()
    view = Layout(root).view_path("g", "pattern")
    for change in ("index forgotten", "a person's bullet added"):
        if change == "index forgotten":
            forget_index(root)
        else:
            view.write_text(view.read_text() + "- another by hand\n")
        store = await FileBackend.open(root, watch=False)
        try:
            assert await store.get(memory.id) == memory, change
            assert await store.count() == 1 + (change != "index forgotten")
        finally:
            await store.aclose()



async def test_a_file_added_within_the_second_of_a_whole_second_mtime_is_read(
    tmp_path: Path,
) -> None:
    """A file system that keeps whole seconds (ext4 with small inodes, HFS+) leaves a folder's
    mtime as it was when a person adds a file within that second. A record of that mtime made
    more than 50 ms after it (the racy window of a file system that keeps nanoseconds) hid such
    a file from every open till the folder changed again."""
    root = tmp_path / "files"
    files = await FileBackend.open(root, watch=False)
    try:
        await files.upsert(episode(0, "graph", "note"))
    finally:
        await files.aclose()
    folder = Layout(root).group_folder("g0")
    second = 1_700_000_000 * 10**9  # the folder's mtime, as such a file system keeps it
    os.utime(folder, ns=(second, second))
    index, _ = FileIndex.open(root)
    try:  # how a catch-up records it, 0.3 s later (the clock is given: no timing here)
        index.files.record_folder(folder, second, second + 300_000_000)
    finally:
        index.close()
    added = episode(2, "added by hand within the same second", "note")
    Layout(root).episode_path("g0", added.id).write_bytes(codec.encode(added))
    os.utime(folder, ns=(second, second))  # the second has not moved on

    reopened = await FileBackend.open(root, watch=False)
    try:
        assert await reopened.get(added.id) == added
    finally:
        await reopened.aclose()
