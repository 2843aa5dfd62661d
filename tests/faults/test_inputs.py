"""Hostile values the model and every layer must refuse or answer with dualmem's own errors:
lone surrogates (what Python makes of a non-UTF-8 byte on the command line), times that leave
the calendar once converted to UTC, ids no memory can have."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest
from every_layer import layer, store  # noqa: F401  (fixtures)

from backends.errors import InvalidEpisode
from backends.graph import GraphBackend
from backends.graph.kuzu import rows
from backends.model import Episode, stable_id
from backends.protocol import MemoryBackend
from fallback import FileBackend
from faults.children import REPO, child_env
from memory.cli import main

SURROGATE = "\udcff"
VALID: dict[str, Any] = {"id": "ep-1", "group_id": "g", "kind": "note", "name": "n", "body": "b",
                         "source": "api"}
TEXT_FIELDS = ["id", "group_id", "kind", "name", "body", "source"]
EDGE_TIMES = [
    datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))),
    datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-12))),
]
TIME_FIELDS = ["created_at", "valid_at", "invalid_at"]
IMPOSSIBLE_IDS = [SURROGATE, f"ep-{SURROGATE}", "", "../../etc/passwd", "x" * 500, "a\x00b",
                  "ep 1", "-leading-dash"]


def bulk_files(folder: Path) -> list[Path]:
    """The graph's temporary COPY files left below ``folder``."""
    return [path for path in folder.rglob(".bulk-*")]


@pytest.mark.parametrize("field", TEXT_FIELDS)
def test_a_lone_surrogate_in_any_text_field_is_refused(field: str) -> None:
    with pytest.raises(InvalidEpisode, match=field):
        Episode.parse(**{**VALID, field: f"x{SURROGATE}y"})


@pytest.mark.parametrize("field", ["group_id", "kind", "name", "body", "source", "key"])
def test_create_refuses_a_lone_surrogate_in_any_argument(field: str) -> None:
    arguments: dict[str, Any] = {"group_id": "g", "kind": "note", "name": "n", "body": "b",
                                 "key": "k"}
    arguments[field] = f"x{SURROGATE}"
    with pytest.raises(InvalidEpisode):
        Episode.create(**arguments)


@pytest.mark.parametrize("position", range(3))
def test_a_stable_id_of_text_that_is_not_utf8_is_refused(position: int) -> None:
    parts = ["g", "note", "key"]
    parts[position] = SURROGATE
    with pytest.raises(InvalidEpisode):
        stable_id(*parts)


async def test_an_unchecked_episode_with_a_surrogate_fails_the_batch_cleanly(
    store: MemoryBackend, tmp_path: Path  # noqa: F811
) -> None:
    """Big enough for the graph's bulk path; the bad episode skipped the model's rules."""
    good = [Episode.parse(**{**VALID, "id": f"ep-{n}", "name": f"memory {n}"})
            for n in range(rows.COPY_MIN + 6)]
    bad = Episode.model_construct(**{**VALID, "id": "ep-bad", "name": f"x{SURROGATE}",
                                     "created_at": good[0].created_at})
    with pytest.raises(InvalidEpisode):
        await store.upsert_many([*good, bad])  # type: ignore[attr-defined]
    assert bulk_files(tmp_path) == []


async def test_a_bulk_copy_that_fails_while_writing_its_file_leaves_no_file(
    tmp_path: Path,
) -> None:
    graph = await GraphBackend.open(tmp_path / "graph")
    try:
        core = graph._open_core()
        bad = Episode.model_construct(**{**VALID, "name": f"x{SURROGATE}",
                                         "created_at": datetime(2025, 1, 1, tzinfo=UTC)})
        writes = [rows.EpisodeWrite(bad, "")]
        with pytest.raises(UnicodeEncodeError):
            await core.db.run(partial(rows.copy_episodes, writes=writes, directory=core.directory))
        assert bulk_files(tmp_path) == []
    finally:
        await graph.aclose()


@pytest.mark.parametrize("field", TIME_FIELDS)
@pytest.mark.parametrize("moment", EDGE_TIMES, ids=["year-1-at-+14", "year-9999-at--12"])
def test_a_time_out_of_range_in_utc_is_refused(field: str, moment: datetime) -> None:
    with pytest.raises(InvalidEpisode, match=field):
        Episode.parse(**{**VALID, field: moment})
    with pytest.raises(InvalidEpisode, match=field):
        given: dict[str, Any] = {field: moment}  # whichever field the test is given
        Episode.create(group_id="g", kind="note", name="n", body="b", **given)


@pytest.mark.parametrize("field", TIME_FIELDS)
def test_import_refuses_a_time_out_of_range_in_utc(
    field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = tmp_path / "in.jsonl"
    lines.write_bytes(orjson.dumps({**VALID, field: "0001-01-01T00:00:00+14:00"}) + b"\n")
    code = main(["--home", str(tmp_path / "home"), "--backend", "file", "--json", "import",
                 str(lines)])
    assert code == 1
    error = orjson.loads(capsys.readouterr().out)["error"]
    assert error["type"] == "InvalidEpisode" and field in error["message"]


@pytest.mark.parametrize("episode_id", IMPOSSIBLE_IDS)
async def test_get_and_delete_of_an_id_no_memory_can_have(
    store: MemoryBackend, episode_id: str  # noqa: F811
) -> None:
    await store.upsert(Episode.parse(**VALID))
    assert await store.get(episode_id) is None
    assert await store.delete(episode_id) is False
    assert await store.count() == 1


@pytest.mark.parametrize("field", ["group_ids", "kinds"])
async def test_a_filter_that_is_not_utf8_is_refused_by_name_on_a_healthy_store(
    store: MemoryBackend, field: str  # noqa: F811
) -> None:
    await store.upsert(Episode.parse(**VALID))
    filters: dict[str, Any] = {field: [SURROGATE]}  # whichever filter the test is given
    with pytest.raises(InvalidEpisode, match=field):
        await store.count(**filters)  # was StoreCorrupt: "memory.kuzu: read failed"
    with pytest.raises(InvalidEpisode, match=field):
        [episode async for episode in store.scan(**filters)]
    assert await store.search("b", **filters) == []  # no memory can match it
    assert await store.count() == 1


@pytest.mark.parametrize("backend", ["file", "graph", "auto"])
def test_the_cli_answers_not_found_for_an_id_that_is_not_utf8(
    tmp_path: Path, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``get`` in a real process, so the id arrives as raw bytes, as a shell passes them;
    ``delete`` in this one, with what Python makes of those bytes."""
    argv = [sys.executable, "-m", "memory", "--home", str(tmp_path), "--backend", backend,
            "--json", "get"]
    made = subprocess.run([*argv[:-2], "init"], capture_output=True, cwd=REPO, timeout=300,
                          env=child_env())
    assert made.returncode == 0, made.stderr  # a home to look in: the id is what is wrong
    done = subprocess.run([*argv, b"ep-\xff"], capture_output=True, cwd=REPO, timeout=300,
                          env=child_env())
    assert done.returncode == 1, done.stderr
    assert b"Traceback" not in done.stderr
    assert orjson.loads(done.stdout)["error"]["type"] == "UnknownId"
    code = main(["--home", str(tmp_path), "--backend", backend, "--json", "delete",
                 f"ep-{SURROGATE}"])
    assert code == 1
    assert orjson.loads(capsys.readouterr().out)["error"]["type"] == "UnknownId"


@pytest.mark.parametrize("episode_id", IMPOSSIBLE_IDS)
async def test_a_delete_remembered_for_an_id_no_memory_can_have_is_a_no_op(
    tmp_path: Path, episode_id: str
) -> None:
    """What the dual store does with a delete it cannot apply yet: no tombstone, no error."""
    files = await FileBackend.open(tmp_path / "files")
    try:
        await files.bury([episode_id, "ep-1"])
        assert [tomb.id async for tomb in files.tombstones()] == ["ep-1"]
    finally:
        await files.aclose()


def nested(depth: int) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for _ in range(depth):
        body = {"deeper": body}
    return body


@pytest.mark.parametrize("body", [nested(300), {"not json": {1, 2}}],
                         ids=["nested-300-deep", "a-set"])
def test_a_structured_body_that_is_not_json_is_refused(body: dict[str, Any]) -> None:
    with pytest.raises(InvalidEpisode, match="body"):
        Episode.create(group_id="g", kind="note", name="n", body=body)


@pytest.mark.parametrize("adr_id", [" ", "\t\n"])
async def test_a_decision_whose_id_is_blank_is_stored_in_every_layer(
    store: MemoryBackend, adr_id: str  # noqa: F811
) -> None:
    """Found through the MCP server (a decision sent with ``decision_id=" "``): the entities of
    a decision record named by a blank id failed an assertion inside every layer's write."""
    body = orjson.dumps({"adr_id": adr_id, "title": adr_id, "decision": "x",
                         "supersedes": adr_id}).decode()
    decision = Episode.create(group_id="g", kind="adr", name="ADR", body=body, key=adr_id)
    await store.upsert(decision)
    assert await store.get(decision.id) == decision
