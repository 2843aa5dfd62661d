"""Damaged copies of the graph are kept as long as the home's ``keep-damaged`` setting says (a
count, or an age), removed once the graph is taken over again, and listed by ``status``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.store import damaged
from memory.store.damaged import Retention
from memory.store.selection import open_memory
from memory.store.settings import SettingsError, store_setting
from memory.store.status import Status

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def set_aside(home: Path, days_ago: int, inside: bool = False) -> Path:
    """A copy as salvage leaves one: the graph folder moved aside, or its database file."""
    stamp = (NOW - timedelta(days=days_ago)).strftime("%Y%m%dT%H%M%S%f")
    path = (home / "graph" / f"memory.kuzu.damaged-{stamp}" if inside
            else home / f"graph.damaged-{stamp}")
    path.mkdir(parents=True)
    (path / "memory.kuzu").write_bytes(b"x" * 10)
    return path


def test_a_count_keeps_the_newest_and_an_age_the_recent(tmp_path: Path) -> None:
    copies = [set_aside(tmp_path, days, inside=days % 2 == 0) for days in (1, 2, 10, 40)]
    assert [c.path for c in damaged.find(tmp_path)] == copies
    assert damaged.find(tmp_path)[0].size == 10
    assert damaged.prune(tmp_path, Retention(age=timedelta(days=30)), NOW) == copies[3:]
    assert damaged.prune(tmp_path, Retention(count=1), NOW) == copies[1:3]
    assert [c.path for c in damaged.find(tmp_path)] == copies[:1]
    assert not copies[3].exists() and (tmp_path / "graph").is_dir()


def test_the_setting_is_a_count_or_an_age_and_nothing_else(tmp_path: Path) -> None:
    assert Retention.of(tmp_path) == Retention(count=3)  # the default
    store_setting(tmp_path, "keep-damaged", "30d")
    assert Retention.of(tmp_path) == Retention(age=timedelta(days=30))
    with pytest.raises(SettingsError, match="neither a count"):
        store_setting(tmp_path, "keep-damaged", "forever")
    assert Retention.of(tmp_path) == Retention(age=timedelta(days=30))


async def test_taking_the_graph_over_prunes_them_and_status_lists_those_kept(
    tmp_path: Path
) -> None:
    copies = [set_aside(tmp_path, days) for days in (1, 2, 3, 4)]
    store_setting(tmp_path, "keep-damaged", "2")
    async with open_memory(tmp_path, "auto") as store:
        await store.count()
    kept = damaged.find(tmp_path)
    assert [c.path for c in kept] == copies[:2]
    report = Status(tmp_path, "auto", "test", {}, (), damaged=tuple(kept))
    assert all(str(path) in report.describe() for path in copies[:2])
    assert report.to_json()["damaged_copies"][0]["path"] == str(copies[0])
