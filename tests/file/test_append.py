"""Episodes appended to the journal without its index (``fallback.append``): durable in the
journal's own format, taken in by the index's next open with their journal position, and never
marked as seen by a writer that records its folder in between."""

from __future__ import annotations

from pathlib import Path

import pytest

from backends.errors import InvalidEpisode
from backends.kinds import GOTCHA
from backends.model import Episode
from fallback import FileBackend, file_record
from fallback.append import NotAppendable, append, stored
from fallback.layout import Layout

GROUP = "proj"
LIMIT = 1 << 20


def memory(key: str, kind: str = "codebase_discovery") -> Episode:
    return Episode.create(group_id=GROUP, kind=kind, key=key, name=f"about {key}",
                          body={"file": key, "description": f"what {key} is for"},
                          source="capture")


async def test_a_writer_after_an_append_leaves_the_appended_file_to_the_next_open(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A writer whose record of the folder is not racy (slower than the racy window between
    # its rename and its record, as under load) marked the folder as agreeing with the index,
    # appended file and all: no later open read it.
    monkeypatch.setattr(file_record, "_RACY_NS", 0)
    root = tmp_path / "files"
    writer = await FileBackend.open(root, watch=False)
    try:
        await writer.upsert(memory("a.py"))
        position = writer.position()
        appended = memory("b.py")
        [receipt] = append(root, [appended], LIMIT)
        assert Path(receipt.location) == Layout(root).episode_path(GROUP, appended.id)
        await writer.upsert(memory("c.py"))  # records the folder it wrote
    finally:
        await writer.aclose()
    reader = await FileBackend.open(root, watch=False)
    try:
        assert await reader.get(appended.id) == appended
        assert [hit.episode.id for hit in await reader.search("b.py", limit=1)] == [appended.id]
        assert appended.id in reader.changes_since(position).written  # the graph replays it
        assert not (root / "unindexed" / GROUP).exists()  # read, so no longer marked
    finally:
        await reader.aclose()


def gotcha(key: str, text: str) -> Episode:
    return Episode.create(group_id=GROUP, kind=GOTCHA, key=key, name=key, body=text,
                          source="capture")


async def test_an_appended_gotcha_shows_on_its_page_after_the_next_open_with_a_persons_edit(
        tmp_path: Path) -> None:
    # A person edits gotchas.md between the append and the next open: the catch-up that
    # renders the appended gotchas takes their edit in first.
    root = tmp_path / "files"
    writer = await FileBackend.open(root, watch=False)
    try:
        await writer.upsert(gotcha("utc", "store times in UTC"))
    finally:
        await writer.aclose()
    page = root / "views" / GROUP / "gotchas.md"
    assert "store times in UTC" in page.read_text()
    updated, new = gotcha("utc", "store times in UTC, show local"), gotcha("ids", "ids are text")
    append(root, [updated, new], LIMIT)
    with page.open("a") as markdown:
        markdown.write("- Never edit the journal by hand\n")
    reader = await FileBackend.open(root, watch=False)
    try:
        assert [await reader.get(e.id) for e in (updated, new)] == [updated, new]
        text = page.read_text()
        assert "show local" in text and "ids are text" in text
        assert "Never edit the journal by hand" in text
        [hand] = [hit.episode for hit in await reader.search("journal by hand", limit=5)]
        assert hand.kind == GOTCHA and hand.id not in (updated.id, new.id)
        assert not (root / "unindexed" / GROUP).exists()
    finally:
        await reader.aclose()


async def test_what_is_stored_is_read_from_its_file(tmp_path: Path) -> None:
    root = tmp_path / "files"
    first = memory("a.py")
    assert stored(root, GROUP, first.id) is None
    append(root, [first], LIMIT)
    assert stored(root, GROUP, first.id) == first
    with pytest.raises(NotAppendable, match="another group"):
        stored(root, "other", first.id)
    with pytest.raises(InvalidEpisode):
        append(root, [memory("big.py").model_copy(update={"body": "x" * 100})], 10)
    assert sorted(p.name for p in Layout(root).group_folder(GROUP).iterdir()) == [
        Layout(root).episode_path(GROUP, first.id).name]
