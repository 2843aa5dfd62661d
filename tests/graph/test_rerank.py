"""``dualmem search --rerank``: the configured LLM (here a scripted stand-in, so its quality is
not measured, only what it is sent and what a failure leaves) reorders the first hits."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from graph.scripted_chat import ScriptedChat
from memory.cli import main
from memory.store import rerank

BODIES = ["the deploy script tags the release after the tests pass",
          "the release notes are written from the merged pull requests",
          "the release branch is cut every second Tuesday " + "x" * 2000]


@pytest.fixture
def chat() -> Iterator[ScriptedChat]:
    served = ScriptedChat({"RerankedOrder": {"order": [3, 1]}})
    yield served
    served.close()


@pytest.fixture
def home(tmp_path: Path) -> list[str]:
    home = ["--home", str(tmp_path / ".dualmem")]
    assert main([*home, "init"]) == 0
    for n, body in enumerate(BODIES):
        assert main([*home, "add", "--kind", "note", "--name", f"n{n}", "--body", body]) == 0
    return home


def search(home: list[str], capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    capsys.readouterr()
    assert main([*home, *args]) == 0
    return [hit["episode"]["body"] for hit in orjson.loads(capsys.readouterr().out)["hits"]]


def test_the_llm_reorders_the_first_hits(home: list[str], chat: ScriptedChat,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    offline = search(home, capsys, "--json", "search", "release")
    asked: list[Any] = []

    def answer(messages: Any) -> dict[str, list[int]]:
        asked.append(messages)
        return {"order": [3, 1]}

    chat.answers["RerankedOrder"] = answer
    ranked = search(home, capsys, "--llm", f"m@{chat.url}", "--json", "search", "release",
                    "--rerank")
    assert len(offline) == 3 and offline != ranked
    assert ranked == [offline[2], offline[0], offline[1]]  # the left-out one after the picked
    [messages] = asked
    shown = messages[-1]["content"]
    assert len(shown) <= rerank.MAX_PROMPT_CHARS and "x" * (rerank.PASSAGE_CHARS + 1) not in shown


def test_a_failing_llm_leaves_the_offline_ranking_saying_so_under_verbose(
        home: list[str], chat: ScriptedChat, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    offline = search(home, capsys, "--json", "search", "release")
    asked = ["--llm", f"m@{chat.url}", "--json", "search", "release", "--rerank"]
    chat.failing = True
    assert search(home, capsys, *asked) == offline
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []  # silent
    caplog.set_level(logging.INFO)  # what --verbose does in a process of its own
    for answer in (None, {"order": "not numbers"}):
        chat.failing = answer is None
        chat.answers["RerankedOrder"] = answer
        caplog.clear()
        assert search(home, capsys, *asked) == offline
        said = [r.getMessage() for r in caplog.records if r.name == rerank.__name__]
        assert len(said) == 1 and "offline ranking kept" in said[0]


def test_rerank_without_an_llm_is_refused(home: list[str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*home, "search", "release", "--rerank"]) == 2
    assert "--rerank needs an LLM" in capsys.readouterr().err


async def test_an_llm_past_its_deadline_leaves_the_offline_ranking(
        chat: ScriptedChat, caplog: pytest.LogCaptureFixture) -> None:
    from backends.graph import remote
    from backends.model import Episode, Hit

    hits = [Hit(episode=Episode.create(group_id="g", kind="note", name=body[:8], body=body),
                score=0.5, layer="file") for body in BODIES]
    llm = remote.llm("m", url=chat.url, key="none")
    caplog.set_level(logging.INFO)
    assert await rerank.rerank(llm, "release", hits, deadline=0.0) == hits
    assert [r.getMessage() for r in caplog.records if r.name == rerank.__name__] == [
        "rerank skipped, the offline ranking kept: no answer within 0 s"]
    assert await rerank.rerank(llm, "release", hits) != hits  # in time, it is asked
