"""The facts rewrites retired survive a graph rebuilt from the journal: the holder keeps them in
the journal's ``history.jsonl`` and gives them back to a graph made from the journal, once,
as they were; a damaged history file costs only its damaged lines."""

from __future__ import annotations

import logging
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.errors import WriteFailed
from backends.graph.history import KeptFact
from backends.model import Episode
from backends.search.entities import Entity
from fallback import kept_log
from memory.store.config import Config
from memory.store.dual import DualBackend
from memory.store.selection import open_memory

T0 = datetime(2024, 5, 1, 8, 0, tzinfo=UTC)


def discovery(files: list[str]) -> Episode:
    return Episode.create(group_id="proj", kind="codebase_discovery", name="discovery",
                          key="d", body={"files": files}, created_at=T0)


async def retired_after_reopening(home: Path) -> list[KeptFact]:
    async with open_memory(home, "auto") as store:
        assert isinstance(store, DualBackend) and store.holds_graph
        await store.catch_up()
        found = await store.retired_facts()
        assert found is not None
        return found


async def test_a_rebuilt_graph_gets_the_retired_facts_back_once(tmp_path: Path) -> None:
    config = Config(home=tmp_path)
    async with open_memory(tmp_path, "auto") as store:
        assert isinstance(store, DualBackend)
        await store.upsert(discovery(["src/a.py", "src/b.py"]))
        await store.catch_up()
        await store.upsert(discovery(["src/a.py", "src/c.py"]))  # retires the fact on b.py
        await store.catch_up()
        retired = await store.retired_facts()
    assert retired is not None and len(retired) == 1
    assert kept_log.read(config.files_dir / "history.jsonl", KeptFact.from_json) == retired

    shutil.rmtree(config.graph_dir)  # the graph is gone; the journal replays into a new one
    assert await retired_after_reopening(tmp_path) == retired  # as it was: times, ends, text
    assert await retired_after_reopening(tmp_path) == retired  # no duplicate on the next open
    assert len(kept_log.read(config.files_dir / "history.jsonl", KeptFact.from_json)) == 1
    lines = (config.files_dir / "history.jsonl").read_bytes().splitlines()
    assert len(lines) == 1


def note(key: str, files: list[str]) -> Episode:
    return Episode.create(group_id="proj", kind="codebase_discovery", name=key, key=key,
                          body={"files": files}, created_at=T0)


async def test_a_save_that_failed_is_made_by_a_later_one(tmp_path: Path) -> None:
    # A save reads only what the memories written since retired; one the disk refused stays
    # due for the next, in this process (a later write) or the next holder (its take-over).
    history = Config(home=tmp_path).files_dir / "history.jsonl"

    def saved() -> set[str]:
        return {fact.episode for fact in kept_log.read(history, KeptFact.from_json)}

    async with open_memory(tmp_path, "auto") as store:
        assert isinstance(store, DualBackend)
        for key in "abc":
            await store.upsert(note(key, [f"src/{key}.py", "src/x.py"]))
        await store.catch_up()
        history.mkdir()  # where the file goes: its saves fail, the graph keeps the facts
        await store.upsert(note("a", ["src/y.py"]))
        await store.catch_up()
        history.rmdir()
        await store.upsert(note("b", ["src/y.py"]))
        await store.catch_up()
        assert saved() == {note("a", []).id, note("b", []).id}
        history.unlink()
        history.mkdir()
        await store.upsert(note("c", ["src/y.py"]))
    history.rmdir()  # its close could not save either
    # The next holder's take-over saves every retired fact the file lacks.
    assert len(await retired_after_reopening(tmp_path)) == 3
    assert saved() == {note(key, []).id for key in "abc"}


async def test_damaged_lines_are_skipped_and_the_rest_restored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = Config(home=tmp_path)
    async with open_memory(tmp_path, "auto") as store:
        assert isinstance(store, DualBackend)
        await store.upsert(discovery(["src/a.py", "src/b.py"]))
        await store.catch_up()
        await store.upsert(discovery(["src/a.py", "src/c.py"]))
        await store.catch_up()
    path = config.files_dir / "history.jsonl"
    kept = path.read_bytes()
    path.write_bytes(b'{"not": "a fact"}\n[1, 2]\n' + kept + b'{"uuid": "torn')
    shutil.rmtree(config.graph_dir)
    with caplog.at_level(logging.WARNING, logger="memory.store.kept_log"):
        restored = await retired_after_reopening(tmp_path)
    saved = kept_log.read(path, KeptFact.from_json)
    assert [fact.uuid for fact in restored] == [fact.uuid for fact in saved]
    assert len(restored) == 1
    warned = {r.getMessage().split(": skipped", 1)[0].rsplit(":", 1)[1] for r in caplog.records
              if ": skipped (" in r.getMessage()}
    assert warned == {"1", "2", "4"}  # the three damaged lines, by number


def test_an_append_after_a_torn_line_starts_a_whole_one(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(b'{"uuid": "torn')
    fact = retired_fact("f", T0)
    assert kept_log.append(path, [fact]) == 1
    assert kept_log.read(path, KeptFact.from_json) == [fact]


def test_a_history_file_that_cannot_be_written_raises_write_failed(tmp_path: Path) -> None:
    with pytest.raises(WriteFailed, match=r"history\.jsonl: not saved"):
        kept_log.append(tmp_path / "missing" / "history.jsonl", [retired_fact("f", T0)])


def retired_fact(key: str, at: datetime, invalid: datetime | None = None) -> KeptFact:
    return KeptFact(uuid=key, episode="e", group_id="g", name="MENTIONS", fact=f"fact {key}",
                       created_at=at, valid_at=at, invalid_at=invalid, expired_at=at,
                       source=Entity("a", "File", "src/a.py"), target=Entity("b", "Pattern", "b"))


times = st.datetimes(min_value=datetime(1970, 1, 2), timezones=st.just(UTC))
facts = st.builds(retired_fact, st.text("abcdef", min_size=1, max_size=3), times,
                  st.none() | times)


@given(st.lists(st.lists(facts, max_size=4), max_size=4))
def test_appended_facts_read_back_in_order(tmp_path_factory: pytest.TempPathFactory,
                                           batches: list[list[KeptFact]]) -> None:
    path = tmp_path_factory.mktemp("history") / "history.jsonl"
    for batch in batches:
        kept_log.append(path, batch)
    assert kept_log.read(path, KeptFact.from_json) == [fact for batch in batches
                                                       for fact in batch]
