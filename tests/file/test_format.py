"""The on-disk format (FORMAT.md): one readable JSON file per episode, written atomically."""

from __future__ import annotations

import ast
import json
import threading
from pathlib import Path

import pytest
from contract.episodes import make

from backends.errors import BackendUnavailable
from fallback import FileBackend, codec


async def test_each_episode_is_one_readable_json_file(files: FileBackend, home: Path) -> None:
    episode = make(1, body="first line\nsecond line")
    receipt = await files.upsert(episode)
    path = home / "files" / "episodes" / "project_a" / "ep-0001.json"
    assert (receipt.layer, receipt.location) == ("file", str(path))
    text = path.read_text()
    assert text.startswith('{\n  "format": "dualmem.episode/1",\n  "id": "ep-0001",\n')
    document = json.loads(text)
    assert list(document) == [
        "format", "id", "group_id", "kind", "name", "source", "created_at", "valid_at",
        "invalid_at", "body",
    ]
    assert document["created_at"] == "2025-03-14T09:27:53.589793Z"
    assert document["body"] == "first line\nsecond line"


async def test_ids_with_colons_and_capitals_get_distinct_safe_names(
    files: FileBackend, home: Path
) -> None:
    ids = ["QG:feature-4", "qg:feature-4", "qg_feature-4", "Qg_feature-4"]
    for number, episode_id in enumerate(ids):
        await files.upsert(make(number, id=episode_id))
    names = [path.name for path in (home / "files" / "episodes" / "project_a").iterdir()]
    assert len(names) == 4
    assert len({name.lower() for name in names}) == 4  # apart on case-insensitive disks too
    assert not any(":" in name for name in names)
    reopened = await FileBackend.open(home / "files")
    try:
        assert sorted([e.id async for e in reopened.scan()]) == sorted(ids)
    finally:
        await reopened.aclose()


async def test_moving_an_episode_to_another_group_leaves_one_file(
    files: FileBackend, home: Path
) -> None:
    await files.upsert(make(1, group_id="project_a"))
    await files.upsert(make(1, group_id="project_b"))
    episodes = home / "files" / "episodes"
    assert sorted(p.relative_to(episodes).as_posix() for p in episodes.rglob("*.json")) == [
        "project_b/ep-0001.json"
    ]
    assert await files.count(group_ids=["project_a"]) == 0
    assert await files.delete("ep-0001") is True
    assert list(episodes.rglob("*.json")) == []


async def test_writes_leave_no_temporary_files(files: FileBackend, home: Path) -> None:
    for number in range(10):
        await files.upsert(make(number, kind="pattern"))
        await files.upsert(make(number, kind="gotcha"))
    for number in range(0, 10, 2):
        await files.delete(make(number).id)
    leftovers = [p for p in (home / "files").rglob(".*") if p.name != ".lock"]
    assert leftovers == []


async def test_a_reader_never_sees_a_half_written_file(files: FileBackend, home: Path) -> None:
    path = home / "files" / "episodes" / "project_a" / "ep-0001.json"
    await files.upsert(make(1))
    stop = threading.Event()
    failures: list[str] = []
    reads = 0

    def read_continuously() -> None:
        nonlocal reads
        while not stop.is_set():
            try:
                codec.decode(path.read_bytes())
            except codec.UnreadableEpisode as exc:
                failures.append(str(exc))
            reads += 1

    reader = threading.Thread(target=read_continuously)
    reader.start()
    try:
        for round_ in range(40):
            await files.upsert(make(1, body="x" * (100_000 if round_ % 2 else 10)))
    finally:
        stop.set()
        reader.join()
    assert reads > 40
    assert failures == []


async def test_open_refuses_a_file_standing_where_its_folder_should_be(tmp_path: Path) -> None:
    (tmp_path / "files").write_text("not a folder")
    with pytest.raises(BackendUnavailable, match="cannot use its folder"):
        await FileBackend.open(tmp_path / "files")


async def test_a_closed_backend_refuses_work_and_closes_again_quietly(files: FileBackend) -> None:
    await files.aclose()
    await files.aclose()
    with pytest.raises(BackendUnavailable, match="closed"):
        await files.get("ep-0001")


def test_the_file_layer_imports_only_the_ground_floor() -> None:
    allowed = {"backends.errors", "backends.kinds", "backends.model", "backends.protocol",
               "backends.search.ranking",
               "backends.search.textindex", "backends.search.entities", "backends.search.expansion",
               "backends.search.entity_ids", "backends.texts",
               "backends.threads", "backends.processes", "backends.flock", "backends.lazy",
               "backends.safe_files", "backends.json_read", "backends.patterns",
               "backends.lean_typing", "backends.id_prefix"}
    ours = {"backends", "memory", "migrate", "seeds", "fallback"}
    package = Path(__file__).resolve().parents[2] / "fallback"
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            # ``from backends import processes`` imports the module backends.processes.
            names = (
                [alias.name for alias in node.names] if isinstance(node, ast.Import)
                else [f"{node.module}.{alias.name}" if node.module == "backends" else
                      node.module or "" for alias in node.names]
                if isinstance(node, ast.ImportFrom) else []
            )
            for name in names:
                top = name.partition(".")[0]
                assert top not in ours or top == "fallback" or name in allowed, (source, name)
