"""The agent memory API: session insights split into focused episodes, stable ids (re-saving
adds nothing), exact history, similar outcomes, the bounded session context, scoping, the
Markdown export, and the stable project id."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from backends.errors import InvalidEpisode
from backends.protocol import MemoryBackend
from memory.agent.decisions import Adr, record_adr, record_failed_approach
from memory.agent.markdown import export_markdown
from memory.agent.memories import AgentMemory, session_from_json
from memory.store.project import project_id

PROJECT = "proj-1"


def insights(session: int) -> dict[str, Any]:
    return {
        "subtasks_completed": [f"subtask-{session}-a", f"subtask-{session}-b"],
        "discoveries": {
            "files_understood": {
                "src/auth/tokens.py": "issues and refreshes JWT tokens",
                f"src/module_{session}.py": f"module written in session {session}",
            },
            "patterns_found": [
                "Wrap every database call in a retry with backoff",
                {"pattern": f"Session {session} pattern: validate config at startup"},
            ],
            "gotchas_encountered": ["The JWT secret must be set in the environment for tests"],
        },
        "what_worked": [f"Implemented subtask {session}"],
        "what_failed": [] if session % 2 else ["The migration test timed out"],
        "recommendations_for_next_session": [f"Start with session {session + 1}'s plan"],
    }


async def kinds(store: MemoryBackend) -> Counter[str]:
    return Counter([episode.kind async for episode in store.scan(group_ids=[PROJECT])])


async def test_session_insights_split_into_focused_episodes(store: MemoryBackend) -> None:
    memory = AgentMemory(store, PROJECT)
    saved = await memory.save_session_insights(1, insights(1))
    assert saved[0].kind == "session_insight"
    # task outcomes: the two subtasks and what worked
    expected = {"session_insight": 1, "pattern": 2, "gotcha": 1, "codebase_discovery": 2,
                "task_outcome": 3, "recommendation": 1}
    assert await kinds(store) == expected
    await memory.save_session_insights(1, insights(1))  # saving again adds nothing
    await memory.add_pattern("wrap every database call in a retry, with backoff.")
    await memory.add_gotcha("The JWT secret must be set in the environment for tests")
    await memory.add_codebase_discoveries({"src/auth/tokens.py": "issues and refreshes JWT tokens"})
    assert await kinds(store) == expected
    # Auto-Claude's codebase_map.json form: {path: {"description": ..., ...}}
    [tokens] = await memory.add_codebase_discoveries(
        {"src/auth/tokens.py": {"description": "JWT tokens", "discovered_at": "2026-01-02"}}
    )
    assert tokens.data == {"file": "src/auth/tokens.py", "description": "JWT tokens",
                           "discovered_at": "2026-01-02"}
    await memory.save_session_insights(2, insights(2))  # a new session shares a pattern, a file
    assert await kinds(store) == {"session_insight": 2, "pattern": 3, "gotcha": 1,
                                  "codebase_discovery": 3, "task_outcome": 6,
                                  "recommendation": 2, "failed_approach": 1}


async def test_session_history_is_exact_and_newest_first(store: MemoryBackend) -> None:
    memory = AgentMemory(store, PROJECT)
    for session in (3, 1, 10, 2):
        await memory.save_session_insights(session, insights(session))
    history = await memory.get_session_history(limit=3)
    assert [s["session_number"] for s in history] == [10, 3, 2]
    assert history[0]["what_worked"] == ["Implemented subtask 10"]
    assert len(await memory.get_session_history(limit=50)) == 4


async def test_similar_task_outcomes_rank_the_matching_task_first(store: MemoryBackend) -> None:
    memory = AgentMemory(store, PROJECT)
    await memory.add_task_outcome(
        "TASK-1", True, "token refresh works", description="Add JWT token refresh to the auth API",
        task_type="feature", complexity=5, turns=2,
    )
    await memory.add_task_outcome(
        "TASK-2", False, "flaky", description="Render the billing invoice as a PDF", turns=4,
    )
    similar = await memory.get_similar_task_outcomes("refresh JWT tokens in auth", limit=5)
    assert similar and similar[0].outcome.task_id == "TASK-1"
    assert similar[0].outcome.turns == 2 and similar[0].outcome.success
    assert 0 < similar[0].score <= 1
    await memory.add_task_outcome("TASK-1", False, "regressed", description="JWT refresh")
    assert await store.count(group_ids=[PROJECT], kinds=["task_outcome"]) == 2


async def test_context_for_session_is_relevant_and_bounded(store: MemoryBackend) -> None:
    memory = AgentMemory(store, PROJECT)
    assert await memory.get_context_for_session("anything at all") == ""
    for session in range(1, 5):
        await memory.save_session_insights(session, insights(session))
    await record_failed_approach(store, PROJECT, "Store JWT secrets in the repo",
                                 symptom="secret leaked", prevention="read it from the env")
    await record_adr(store, PROJECT, Adr(adr_id="ADR-001", title="JWT for auth",
                                         decision="Use short-lived JWT tokens"))
    context = await memory.get_context_for_session("refresh the JWT tokens")
    assert context.startswith("## Memory for this task")
    for section in ("### Gotchas and failed approaches", "### Decisions in force", "### Files",
                    "### Recent sessions"):
        assert section in context
    assert "JWT secret must be set" in context and "Store JWT secrets in the repo" in context
    assert context.index("Session 4") < context.index("Session 3")
    for limit in (0, 30, 200, 700, 4000):
        bounded = await memory.get_context_for_session("refresh the JWT tokens", max_chars=limit)
        assert len(bounded) <= limit
        assert bounded == "" or bounded.startswith("## Memory for this task")


async def test_a_spec_is_recorded_on_its_memories_in_the_projects_group(
    store: MemoryBackend,
) -> None:
    project = AgentMemory(store, PROJECT)
    spec = AgentMemory(store, PROJECT, spec="042-auth")
    other = AgentMemory(store, PROJECT, spec="043-billing")
    await project.add_gotcha("Never log the JWT secret")
    episode = await spec.add_gotcha("Token refresh races with logout")
    assert episode.group_id == PROJECT and episode.data["spec"] == "042-auth"
    # Every spec numbers its sessions from 1: the same number in two specs is two memories.
    first = await spec.save_session_insights(1, insights(1))
    second = await other.save_session_insights(1, insights(1))
    assert not {e.id for e in first} & {e.id for e in second}
    assert [s["spec"] for s in await spec.get_session_history()] == ["042-auth"]
    assert sorted(s["spec"] for s in await project.get_session_history()) == [
        "042-auth", "043-billing"]
    assert {e.data["spec"] for e in await spec.memories()} == {"042-auth"}
    assert len(await project.memories()) == 2 * len(first) + 2
    for memory in (project, spec):  # the project sees every spec, a spec the whole project
        context = await memory.get_context_for_session("JWT secret logout")
        assert "Never log the JWT secret" in context and "Token refresh races" in context
        assert "Session 1 (042-auth)" in context


async def test_markdown_export_renders_any_store(store: MemoryBackend, tmp_path: Path) -> None:
    memory = AgentMemory(store, PROJECT)
    await memory.save_session_insights(7, insights(7))
    await record_failed_approach(store, PROJECT, "Retry forever", symptom="hangs")
    out = tmp_path / "export"
    files = await export_markdown(store, out)
    assert files == ["codebase_map.md", "gotchas.md", "patterns.md",
                     f"sessions/{PROJECT}/session_007.md"]
    patterns = (out / "patterns.md").read_text()
    assert f"## {PROJECT}" in patterns and "- Wrap every database call" in patterns
    gotchas = (out / "gotchas.md").read_text()
    assert "JWT secret must be set" in gotchas and "Retry forever: hangs" in gotchas
    assert "- `src/auth/tokens.py`: issues and refreshes JWT tokens" in (
        out / "codebase_map.md").read_text()
    session = (out / f"sessions/{PROJECT}/session_007.md").read_text()
    assert session.startswith("# Session 7") and "## What worked" in session


def test_a_session_file_names_its_number() -> None:
    body = orjson.dumps(insights(5)).decode()
    assert session_from_json(body, file_name="session_012.json")[0] == 12
    assert session_from_json(body, file_name="session_012.json", session_num=3)[0] == 3
    numbered = orjson.dumps({**insights(5), "session_number": 8}).decode()
    assert session_from_json(numbered, file_name="notes.json")[0] == 8
    for text, message in [("[1]", "not a JSON object"), ("{", "not valid JSON"),
                          (body, "no session number")]:
        with pytest.raises(InvalidEpisode, match=message):
            session_from_json(text, file_name="notes.json")


def test_project_id_is_created_once_and_survives_moving_the_folder(tmp_path: Path) -> None:
    home = tmp_path / "widget" / ".dualmem"
    first = project_id(home)
    assert first.startswith("widget-") and project_id(home) == first
    shutil.move(tmp_path / "widget", tmp_path / "renamed")
    assert project_id(tmp_path / "renamed" / ".dualmem") == first
