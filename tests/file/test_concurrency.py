"""Two processes writing to one folder at once lose nothing and duplicate nothing."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

from backends.model import stable_id
from fallback import FileBackend, codec
from fallback.index import FILE as INDEX_FILE
from fallback.index import FileIndex
from fallback.layout import VIEW_FILES
from file.helpers import eventually

WRITER = Path(__file__).with_name("writer.py")
PER_PROCESS = 500


def expected_ids(prefix: str) -> set[str]:
    kinds = ["pattern" if n % 50 == 0 else "session_insight" for n in range(PER_PROCESS)]
    return {
        stable_id(f"group_{n % 3}", kind, f"{prefix}-{n}") for n, kind in enumerate(kinds)
    }


async def test_two_processes_adding_500_each_end_with_exactly_1000(home: Path) -> None:
    folder = home / "files"
    live = await FileBackend.open(folder)
    try:
        writers = [
            await asyncio.create_subprocess_exec(
                sys.executable, "-W", "error", str(WRITER), str(folder), prefix, str(PER_PROCESS),
                stderr=asyncio.subprocess.PIPE,
            )
            for prefix in ("left", "right")
        ]
        for writer in writers:
            _, errors = await asyncio.wait_for(writer.communicate(), timeout=120)
            assert writer.returncode == 0, errors.decode()
        expected = expected_ids("left") | expected_ids("right")
        assert len(expected) == 2 * PER_PROCESS
        assert await eventually(lambda: live.count(), lambda n: n == len(expected)) == len(expected)
        assert {e.id async for e in live.scan()} == expected
    finally:
        await live.aclose()

    files = sorted((folder / "episodes").rglob("*.json"))
    assert len(files) == 2 * PER_PROCESS
    assert {codec.decode(path.read_bytes()).id for path in files} == expected
    reopened = await FileBackend.open(folder)
    try:
        assert await reopened.count() == len(expected)
        assert reopened.problems == []
        for group in ("group_0", "group_1", "group_2"):
            view = (folder / "views" / group / VIEW_FILES["pattern"]).read_text()
            patterns = await reopened.count(group_ids=[group], kinds=["pattern"])
            assert view.count("<!-- dualmem ") == patterns > 0
    finally:
        await reopened.aclose()


async def test_processes_opening_a_new_folder_at_once_all_write(tmp_path: Path) -> None:
    # Each one may find the index another is still creating: it must wait, not replace it
    # (before, 9 of 120 such writers failed with "database disk image is malformed").
    for round_ in range(8):
        folder = tmp_path / f"round-{round_}"
        writers = [
            await asyncio.create_subprocess_exec(
                sys.executable, "-W", "error", str(WRITER), str(folder), f"w{n}", "1",
                stderr=asyncio.subprocess.PIPE,
            )
            for n in range(6)
        ]
        for writer in writers:
            _, errors = await asyncio.wait_for(writer.communicate(), timeout=120)
            assert writer.returncode == 0, errors.decode()
        reopened = await FileBackend.open(folder, watch=False)
        try:
            assert {e.id async for e in reopened.scan()} == {
                stable_id("group_0", "pattern", f"w{n}-0") for n in range(6)}
        finally:
            await reopened.aclose()


def test_a_look_at_an_index_another_process_is_creating_writes_nothing_to_it(
    tmp_path: Path,
) -> None:
    # Its creator has made the file and not yet set WAL mode. Converting it under the creator
    # (as an opener's first look did) made the creator's own conversion fail at once with
    # "database is locked": 1 of 1,800 openers of new homes, six at a time.
    path = tmp_path / INDEX_FILE
    creator = sqlite3.connect(path, isolation_level=None)
    try:
        creator.execute("SELECT 1")
        assert FileIndex._current_at(path) is None  # not current: the opener waits its turn
        assert path.stat().st_size == 0
        assert sorted(p.name for p in tmp_path.iterdir()) == [INDEX_FILE]
        assert creator.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    finally:
        creator.close()


def test_an_index_not_in_wal_mode_is_replaced(tmp_path: Path) -> None:
    # Readers must not wait for writers: an index some tool switched out of WAL is rebuilt.
    index, fresh = FileIndex.open(tmp_path)
    index.close()
    assert fresh
    other = sqlite3.connect(tmp_path / INDEX_FILE, isolation_level=None)
    other.execute("PRAGMA journal_mode=DELETE")
    other.close()
    index, fresh = FileIndex.open(tmp_path)
    index.close()
    assert fresh
    reopened, fresh = FileIndex.open(tmp_path)
    reopened.close()
    assert not fresh
