"""Bad input: each is a named error or a report, and nothing is written."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from contract.episodes import make

from backends.errors import InvalidEpisode, WriteFailed
from backends.model import Episode
from fallback import FileBackend
from file.helpers import tree

BAD_GROUPS = ["a/b", "..", "../outside", "x\x00y", "", "g" * 129, "with space"]


def unchecked(**fields: Any) -> Episode:
    """An episode that skipped the model's rules, as a careless caller could build one."""
    return Episode.model_construct(**{**make(1).model_dump(), **fields})


@pytest.mark.parametrize("group", BAD_GROUPS)
async def test_bad_group_ids_are_refused_and_nothing_is_written(
    files: FileBackend, tmp_path: Path, group: str
) -> None:
    before = tree(tmp_path)
    with pytest.raises(InvalidEpisode, match="group"):
        Episode.create(group_id=group, kind="note", name="n", body="b")
    with pytest.raises(InvalidEpisode, match="group"):
        await files.upsert(unchecked(group_id=group))
    assert tree(tmp_path) == before
    assert await files.count() == 0


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "pattern\n"}, {"kind": "a/b"}, {"name": "two\nlines"}, {"name": "cr\rhere"},
        {"name": ""}, {"id": "../../escape"}, {"id": "a/b"}, {"id": ".hidden"},
        {"body": "lone surrogate \ud800 is not UTF-8"}, {"body": b"\xff\xfe not text"},
        {"body": "nul \x00 inside"},
    ],
)
async def test_malformed_fields_are_refused_and_nothing_is_written(
    files: FileBackend, tmp_path: Path, fields: dict[str, Any]
) -> None:
    before = tree(tmp_path)
    with pytest.raises(InvalidEpisode):
        await files.upsert(unchecked(**fields))
    assert tree(tmp_path) == before


async def test_a_body_over_the_limit_is_refused(tmp_path: Path) -> None:
    backend = await FileBackend.open(tmp_path / "files", max_body_bytes=1000)
    try:
        await backend.upsert(make(1, body="é" * 500))  # 1000 bytes: just fits
        before = tree(tmp_path)
        with pytest.raises(InvalidEpisode, match="over the limit of 1000 bytes"):
            await backend.upsert(make(2, body="é" * 500 + "!"))
        assert tree(tmp_path) == before
        assert await backend.count() == 1
    finally:
        await backend.aclose()


async def test_naive_times_are_stored_as_utc(files: FileBackend, home: Path) -> None:
    naive = datetime(2025, 1, 2, 3, 4, 5, 678901)
    await files.upsert(unchecked(created_at=naive, valid_at=naive))
    stored = await files.get("ep-0001")
    assert stored is not None
    assert stored.created_at == stored.valid_at == naive.replace(tzinfo=UTC)
    assert stored.created_at.tzinfo is UTC
    text = (home / "files" / "episodes" / "project_a" / "ep-0001.json").read_text()
    assert '"created_at": "2025-01-02T03:04:05.678901Z"' in text


DAMAGED = {
    "truncated.json": b'{\n  "format": "dualmem.episode/1",\n  "id": "trunc',
    "not-json.json": b"\x00\x01 this is not json",
    "list.json": b"[1, 2, 3]",
    "other-format.json": b'{"hello": "world"}',
    "empty.json": b"",
}


async def test_damaged_episode_files_are_reported_and_left_untouched(home: Path) -> None:
    first = await FileBackend.open(home / "files")
    await first.upsert(make(1, body="a good memory"))
    await first.aclose()
    folder = home / "files" / "episodes" / "project_a"
    for name, data in DAMAGED.items():
        (folder / name).write_bytes(data)
    misplaced = folder / "ep-0009.json"
    misplaced.write_bytes((folder / "ep-0001.json").read_bytes())
    backend = await FileBackend.open(home / "files")
    try:
        assert [e.id async for e in backend.scan()] == ["ep-0001"]
        assert [h.episode.id for h in await backend.search("good memory")] == ["ep-0001"]
        reported = dict(backend.problems)
        assert set(reported) == {folder / name for name in DAMAGED} | {misplaced}
        assert "not JSON" in reported[folder / "truncated.json"]
        assert "belongs at" in reported[misplaced]
        await backend.upsert(make(2))
        await backend.delete("ep-0001")
    finally:
        await backend.aclose()
    for name, data in DAMAGED.items():
        assert (folder / name).read_bytes() == data


async def test_a_symlinked_group_folder_cannot_lead_writes_outside(
    files: FileBackend, home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (home / "files" / "episodes" / "project_b").symlink_to(outside, target_is_directory=True)
    before = tree(outside)
    with pytest.raises(WriteFailed, match="symbolic link"):
        await files.upsert(make(1, group_id="project_b"))
    assert tree(outside) == before == {}


async def test_filters_with_odd_group_ids_find_nothing_and_touch_nothing(
    files: FileBackend, tmp_path: Path
) -> None:
    await files.upsert(make(1))
    before = tree(tmp_path)
    for group in BAD_GROUPS:
        assert await files.search("episode", group_ids=[group]) == []
        assert await files.count(group_ids=[group]) == 0
        assert [e async for e in files.scan(group_ids=[group])] == []
        assert await files.get(group) is None
        assert await files.delete(group) is False
    assert tree(tmp_path) == before
