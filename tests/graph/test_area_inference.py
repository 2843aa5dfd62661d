"""``dualmem context --infer-areas``: the configured LLM (here a scripted stand-in, so its
judgement is not measured, only what it is sent and what its answer can do) names the areas a
task touches without naming them; their conventions join the context."""

from __future__ import annotations

import io
import logging
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest

from graph.scripted_chat import ScriptedChat
from memory.cli import main
from memory.store import area_guess

TASK = "Add a late fee to overdue invoices"
MEMORIES = [
    ("pattern", "Amounts are Decimal",
     "app/billing/money.py: amounts are Decimal with two places, never float"),
    ("gotcha", "Push tokens expire", "app/notify/push.py: device push tokens expire silently"),
    ("codebase_discovery", "app/billing/money.py", "app/billing/money.py: amounts and rounding"),
]
CONVENTION = "never float"
ELSEWHERE = "expire silently"


@pytest.fixture
def chat() -> Iterator[ScriptedChat]:
    served = ScriptedChat({"NamedAreas": _naming("app/billing")})
    yield served
    served.close()


def _naming(*areas: str) -> Callable[[list[dict[str, str]]], dict[str, list[int]]]:
    """An answer naming ``areas`` by their numbers in the list the prompt shows."""
    def answer(messages: list[dict[str, str]]) -> dict[str, list[int]]:
        shown = dict(re.findall(r"^\[(\d+)\] (.*)$", messages[-1]["content"], re.M))
        return {"areas": [int(n) for n, area in shown.items() if area in areas]}
    return answer


@pytest.fixture
def home(tmp_path: Path) -> list[str]:
    home = ["--home", str(tmp_path / ".dualmem"), "--backend", "file"]
    assert main([*home, "init"]) == 0
    for kind, name, body in MEMORIES:
        assert main([*home, "add", "--kind", kind, "--name", name, "--body", body]) == 0
    return home


def context(home: list[str], capsys: pytest.CaptureFixture[str], *llm: str,
            infer: bool = False) -> dict[str, Any]:
    capsys.readouterr()
    asked = ["--infer-areas"] if infer else []
    assert main([*home, *llm, "--json", "context", TASK, "--complexity", "3", *asked]) == 0
    shown: dict[str, Any] = orjson.loads(capsys.readouterr().out)
    return shown


def test_the_areas_named_bring_their_conventions(home: list[str], chat: ScriptedChat,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    offline = context(home, capsys)
    asked: list[Any] = []
    named = _naming("app/billing")

    def answer(messages: list[dict[str, str]]) -> dict[str, list[int]]:
        asked.append(messages)
        return named(messages)

    chat.answers["NamedAreas"] = answer
    inferred = context(home, capsys, "--llm", f"m@{chat.url}", infer=True)
    assert CONVENTION not in offline["markdown"]  # the task's words never reach it
    assert CONVENTION in inferred["markdown"] and ELSEWHERE not in inferred["markdown"]
    assert inferred["analysis"]["areas"] == ["app/billing"]
    [messages] = asked
    assert TASK in messages[-1]["content"] and "app/notify" in messages[-1]["content"]


@pytest.mark.parametrize("answer", [
    {"areas": [0, 3, 99, -1]},  # numbers of no area shown
    {"areas": "app/billing"},  # not numbers
    {"order": [1]},  # another shape
    None,  # the endpoint fails
])
def test_a_failing_malformed_or_out_of_list_answer_changes_nothing(
        home: list[str], chat: ScriptedChat, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture, answer: Any) -> None:
    offline = context(home, capsys)
    chat.failing = answer is None
    chat.answers["NamedAreas"] = answer
    caplog.set_level(logging.INFO)  # what --verbose does in a process of its own
    inferred = context(home, capsys, "--llm", f"m@{chat.url}", infer=True)
    assert inferred["markdown"] == offline["markdown"] and inferred["analysis"]["areas"] == []
    said = [r.getMessage() for r in caplog.records if r.name == area_guess.__name__]
    unusable = answer is None or "order" in answer or isinstance(answer["areas"], str)
    assert len(said) == unusable  # one line, where the answer could not be read
    assert all("the context as offline" in line for line in said)


async def test_a_late_answer_or_a_hostile_guess_changes_nothing(
        tmp_path: Path, chat: ScriptedChat, caplog: pytest.LogCaptureFixture) -> None:
    from backends.graph import remote
    from backends.model import Episode
    from fallback import FileBackend
    from memory.context import Task, build_context

    store = await FileBackend.open(tmp_path / "files")
    try:
        for kind, name, body in MEMORIES:
            await store.upsert(Episode.create(group_id="p", kind=kind, name=name, body=body))
        task = Task(description=TASK, complexity=3)
        offline = await build_context(store, task, project_id="p")
        llm = remote.llm("m", url=chat.url, key="none")
        caplog.set_level(logging.INFO)
        late = await build_context(store, task, project_id="p", guess_areas=partial(
            area_guess.guess_areas, llm, deadline=0.0))
        assert late.markdown == offline.markdown and late.analysis.task.areas == ()
        assert [r.getMessage() for r in caplog.records if r.name == area_guess.__name__] == [
            "area inference skipped, the context as offline: no answer within 0 s"]

        async def hostile(text: str, areas: Sequence[str]) -> list[str]:
            return ["app", "../../etc", "app/billing/money.py", "", "app/unknown"]

        guessed = await build_context(store, task, project_id="p", guess_areas=hostile)
        assert guessed.markdown == offline.markdown and guessed.analysis.task.areas == ()
        in_time = await build_context(store, task, project_id="p", guess_areas=partial(
            area_guess.guess_areas, llm))
        assert CONVENTION in in_time.markdown  # the same call in time: asked and taken
    finally:
        await store.aclose()


def test_the_switch_off_sends_nothing(home: list[str], chat: ScriptedChat,
                                      capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    llm = ["--llm", f"m@{chat.url}"]
    assert CONVENTION not in context(home, capsys, *llm)["markdown"]
    start = orjson.dumps({"hook_event_name": "SessionStart", "session_id": "s",
                          "source": "startup"})

    def session_start() -> str:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(start)))
        capsys.readouterr()
        assert main([*home, *llm, "hook", "session-start", "--task", TASK]) == 0
        return capsys.readouterr().out

    assert CONVENTION not in session_start()
    assert chat.asked == []  # neither the command nor the hook asked
    assert main([*home, "config", "set", "infer-areas", "yes"]) == 1
    assert main([*home, "config", "set", "infer-areas", "on"]) == 0
    assert CONVENTION in session_start() and chat.asked == ["NamedAreas"]


def test_inference_without_an_llm_is_refused(home: list[str],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main([*home, "context", TASK, "--infer-areas"]) == 2
    assert "--infer-areas needs an LLM" in capsys.readouterr().err


async def test_the_task_context_tool_infers_areas_when_asked(tmp_path: Path,
                                                             chat: ScriptedChat) -> None:
    from backends.graph import remote
    from fallback import FileBackend
    from memory.mcp.tools import MemoryTools
    from memory.store.config import ConfigError
    from memory.store.project import ensure_project_id

    home = tmp_path / "project" / ".dualmem"
    ensure_project_id(home / "project.json", "project")
    store = await FileBackend.open(tmp_path / "files")
    try:
        guess = partial(area_guess.guess_areas, remote.llm("m", url=chat.url, key="none"))
        tools = MemoryTools(store, home, guess_areas=guess)
        await tools.add_memory(kind="pattern", text=MEMORIES[0][2])
        await tools.add_memory(kind="gotcha", text=MEMORIES[1][2])
        offline = await tools.get_task_context(task=TASK, complexity=3)
        assert chat.asked == []
        inferred = await tools.get_task_context(task=TASK, complexity=3, infer_areas=True)
        assert CONVENTION not in offline.markdown and CONVENTION in inferred.markdown
        with pytest.raises(ConfigError, match="needs an LLM"):
            await MemoryTools(store, home).get_task_context(task=TASK, infer_areas=True)
    finally:
        await store.aclose()


async def test_what_one_call_sends_is_bounded_for_a_large_project(chat: ScriptedChat) -> None:
    from backends.graph import remote

    requests: list[dict[str, Any]] = []
    answered = chat.answer

    def counted(request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        requests.append(request)
        return answered(request)

    chat.answer = counted  # type: ignore[method-assign]
    areas = [f"src/{'deeply/' * 20}module_{n}" for n in range(10 * area_guess.MAX_AREAS)]
    llm = remote.llm("m", url=chat.url, key="none")
    chat.answers["NamedAreas"] = {"areas": list(range(1, area_guess.MAX_AREAS + 5))}
    named = await area_guess.guess_areas(llm, "word " * 5000, areas)
    assert named == areas[:area_guess.MAX_NAMED]
    [request] = requests
    system, user = (message["content"] for message in request["messages"])
    assert area_guess.INSTRUCTIONS in system
    assert len(area_guess.INSTRUCTIONS) + len(user) <= area_guess.MAX_PROMPT_CHARS
    assert request["max_tokens"] == area_guess.MAX_ANSWER_TOKENS
    assert await area_guess.guess_areas(llm, "word", []) == [] and len(requests) == 1
