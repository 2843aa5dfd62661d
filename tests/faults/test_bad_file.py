"""One file that cannot be replayed (over the size limit, written by hand) is reported with its
path and reason and skipped: it never holds back the good memories pending beside it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from backends.model import Episode
from fallback import FileBackend, codec
from fallback.layout import Layout
from memory.cli import main
from memory.store.config import Config

GOOD = 300
TOO_BIG = 30 << 20


def dualmem(capsys: pytest.CaptureFixture[str], home: Path, *argv: str) -> tuple[int, Any]:
    code = main(["--home", str(home), *argv, "--json"])
    return code, orjson.loads(capsys.readouterr().out)


async def fill(folder: Path, episodes: list[Episode]) -> None:
    files = await FileBackend.open(folder)
    try:
        await files.upsert_many(episodes)
    finally:
        await files.aclose()


def test_an_oversize_file_among_good_ones_is_reported_and_skipped_by_migrate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = Config(home=tmp_path)
    asyncio.run(fill(config.files_dir, [
        Episode.create(group_id="g", kind="note", name=f"good {n}", body=f"good memory {n}")
        for n in range(GOOD)
    ]))
    big = Episode.create(group_id="g", kind="note", name="too big", body="x" * TOO_BIG)
    path = Layout(config.files_dir).episode_path(big.group_id, big.id)
    path.write_bytes(codec.encode(big))  # by hand: the file layer would refuse it

    for run in range(2):  # and again: still reported, still not in the way
        code, error = dualmem(capsys, tmp_path, "migrate")
        assert code == 1, error
        message = error["error"]["message"]
        assert str(path) in message and f"body of {TOO_BIG} bytes is over the limit" in message
        assert f"wrote {GOOD if run == 0 else 0} of {GOOD + 1}" in message

        code, listed = dualmem(capsys, tmp_path, "--backend", "graph", "list", "--group", "g")
        assert code == 0 and listed["count"] == GOOD

    code, status = dualmem(capsys, tmp_path, "status")
    assert code == 0
    last = status["dual"]["last_migration"]
    assert (last["ok"], last["partial"]) == (False, True)
    assert last["skipped"] == [{"id": big.id, "group_id": "g", "location": str(path),
                                "reason": f"body of {TOO_BIG} bytes is over the limit of "
                                          f"{config.max_body_bytes} bytes"}]
    # The graph refused it and says so; everything else is in the graph.
    assert status["dual"]["pending"] == 1
    assert [line.split(" ")[0] for line in status["dual"]["skipped"]] == [big.id]


def test_a_lone_surrogate_in_the_journal_is_a_named_problem_on_every_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON text may escape a surrogate that is not half of a pair, for which there is no UTF-8:
    orjson refuses it, and so does every read. An episode file holding one is a reported
    problem (never a crash, never a memory no write could store again), and a body holding
    one is plain text."""
    config = Config(home=tmp_path)
    good = Episode.create(group_id="g", kind="gotcha", name="good", body="a good memory")
    # Text a person may write: a JSON body escaping a lone surrogate (as text, it is fine).
    odd = Episode.create(group_id="g", kind="gotcha", name="odd", body='{"memory": "\\ud800"}')
    asyncio.run(fill(config.files_dir, [good, odd]))
    bad = Episode.create(group_id="g", kind="note", name="bad", body="a bad memory")
    path = Layout(config.files_dir).episode_path(bad.group_id, bad.id)
    path.write_bytes(codec.encode(bad).replace(b'"name": "bad"', b'"name": "bad \\udc00"'))

    code, listed = dualmem(capsys, tmp_path, "list", "--group", "g")
    assert code == 0 and sorted(e["id"] for e in listed["episodes"]) == sorted([good.id, odd.id])
    code, found = dualmem(capsys, tmp_path, "search", "memory", "--group", "g")
    assert code == 0 and {hit["episode"]["id"] for hit in found["hits"]} == {good.id, odd.id}
    code, shown = dualmem(capsys, tmp_path, "get", odd.id)
    assert code == 0 and shown["episode"]["body"] == odd.body
    assert odd.data is None
    code, missing = dualmem(capsys, tmp_path, "get", bad.id)
    assert code == 1 and missing["error"]["type"] == "UnknownId"
    code, status = dualmem(capsys, tmp_path, "status")
    assert code == 0 and str(path) in str(status["problems"]), status
    assert "surrogate" in str(status["problems"])
