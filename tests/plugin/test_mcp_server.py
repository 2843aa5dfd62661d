"""One ``dualmem mcp`` server process, driven by the SDK's client over stdio: its tools with
typed, described parameters, one-line tool errors, resources, and a clean exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from memory.store.project import ensure_project_id
from plugin.processes import REPO, call, dualmem, servers, text_of

TOOLS = {
    "search_memories", "add_memory", "get_task_context", "save_session_insights",
    "get_session_history", "get_latest_turn", "get_role_constraints", "get_quality_gates",
    "suggest_implementation_mode", "get_critical_context", "get_memory", "list_memories",
    "update_memory", "forget_memory", "memory_history", "supersede_decision",
    "deprecate_decision", "search_entities", "search_facts", "get_knowledge_gaps",
    "capture_knowledge",
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "app" / ".dualmem"
    ensure_project_id(folder / "project.json", "app")
    turn = tmp_path / "turn.json"
    turn.write_bytes(orjson.dumps({"feature_id": "FEAT-1", "task_id": "T-1", "turn": 1,
                                   "coach_decision": "revise", "coach_feedback": "cover EBUSY"}))
    done = dualmem("--home", str(folder), "--backend", "file", "turns", "record", str(turn))
    assert done.returncode == 0, done.stderr
    return folder


async def test_tools_resources_and_errors(home: Path) -> None:
    async with servers(home, "file", 1) as (client,):
        listed = (await client.list_tools()).tools
        assert {tool.name for tool in listed} == TOOLS
        for tool in listed:
            assert tool.description, tool.name
            for name, schema in tool.input_schema["properties"].items():
                assert schema.get("description"), f"{tool.name}.{name}"

        gotcha = await call(client, "add_memory", kind="gotcha",
                            text="rename() is not atomic across file systems")
        await call(client, "add_memory", kind="pattern", text="Write a temp file, then rename")
        await call(client, "add_memory", kind="discovery", file="notes/store.py",
                   text="saves notes atomically")
        await call(client, "add_memory", kind="outcome", task_id="T-1", success=True,
                   text="atomic saves shipped", title="Save notes atomically")
        decision = await call(client, "add_memory", kind="decision", title="Atomic saves",
                              text="Every save goes through a temp file and a rename")
        assert decision["name"] == "ADR-0001: Atomic saves"  # 000's ADR-NNNN
        again = await call(client, "add_memory", kind="gotcha",
                           text="Rename() is not atomic across file systems!")
        assert again["id"] == gotcha["id"]  # the same text is the same memory

        hits = await call(client, "search_memories", query="rename atomic file systems")
        assert hits[0]["id"] == gotcha["id"] and 0 < hits[0]["score"] <= 1
        only = await call(client, "search_memories", query="atomic", kinds=["codebase_discovery"])
        assert [hit["name"] for hit in only] == ["notes/store.py"]

        context = await call(client, "get_task_context", task="Keep temp files on the same "
                             "file system so rename stays atomic", complexity=3)
        assert "not atomic across file systems" in context["markdown"]
        assert 0 < context["tokens_used"] <= context["budget"]
        shown = [memory["id"] for section in context["memories"].values() for memory in section]
        assert gotcha["id"] in shown and len(shown) == len(set(shown))

        saved = await call(client, "save_session_insights", what_worked=["atomic saves"],
                           gotchas_encountered=["fsync the folder too"])
        assert saved["session_number"] == 1 and saved["saved"]["gotcha"] == 1
        history = await call(client, "get_session_history", limit=3)
        assert [s["session_number"] for s in history] == [1]

        turn = await call(client, "get_latest_turn", feature_id="FEAT-1")
        assert turn["coach_feedback"] == "cover EBUSY"
        assert await call(client, "get_latest_turn", feature_id="FEAT-404") is None

        gates = await call(client, "get_quality_gates", task_type="bugfix", complexity=5)
        assert gates["task_type"] == "feature" and gates["coverage_threshold"] == 0.8
        mode = await call(client, "suggest_implementation_mode", task_type="feature",
                          complexity=2)
        assert mode["mode"]["name"] == "direct" and mode["reason"]
        coach = await call(client, "get_role_constraints", role="coach")
        assert coach["role"] == "coach" and coach["must_do"]
        critical = await call(client, "get_critical_context", task="atomic saves",
                              role="coach", complexity=5)
        assert [d["adr_id"] for d in critical["decisions"]] == ["ADR-0001"]
        assert critical["quality_gates"]["coverage_threshold"] == 0.8
        assert "### Your role: coach" in critical["markdown"]
        assert "**ADR-0001: Atomic saves**" in critical["markdown"]

        # 000's knowledge gaps, for an agent to ask the user (issue 34).
        [gap] = await call(client, "get_knowledge_gaps", focus="goals")
        assert gap["importance"] == "medium" and gap["question"].startswith("What is the")
        kept = await call(client, "capture_knowledge", category="goals",
                          question=gap["question"], answer="Ship the sync API. Then the UI.")
        assert kept["extracted_facts"] == ["[goals] Ship the sync API.", "[goals] Then the UI."]
        assert await call(client, "get_knowledge_gaps", focus="goals") == []

        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        assert resources == {"dualmem://project/patterns.md", "dualmem://project/gotchas.md"}
        gotchas = (await client.read_resource("dualmem://project/gotchas.md")).contents[0]
        assert "not atomic across file systems" in getattr(gotchas, "text", "")
        other = (await client.read_resource("dualmem://groups/elsewhere/patterns.md")).contents
        assert getattr(other[0], "text", "").startswith("# Patterns")

        refusals: list[tuple[str, dict[str, Any], str]] = [
            ("add_memory", {"kind": "discovery", "text": "x"}, "a discovery needs file"),
            ("add_memory", {"kind": "note", "text": "x"}, "kind: Input should be 'gotcha'"),
            ("add_memory", {"kind": "outcome", "text": "x"}, "needs task_id and success"),
            ("get_role_constraints", {"role": "boss"}, "known roles: coach, player"),
            ("get_quality_gates", {"task_type": "feature", "complexity": 11}, "complexity"),
            ("get_task_context", {"task": " "}, "description: Value error, must not be blank"),
            ("search_memories", {"query": "x", "groups": ["../etc"]}, "invalid group id"),
        ]
        for name, arguments, message in refusals:
            result = await client.call_tool(name, arguments)
            text = text_of(result)
            assert result.is_error and message in text, (name, text)
            assert text.startswith(f"Error executing tool {name}: ") and "\n" not in text


def test_a_server_needs_a_home(tmp_path: Path) -> None:
    done = dualmem("--home", str(tmp_path / "none"), "mcp", stdin=b"")
    assert done.returncode == 1 and b"dualmem init" in done.stderr
    assert not (tmp_path / "none").exists()


def test_a_server_closes_its_store_and_exits_when_stdin_closes(home: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = subprocess.Popen(
        [sys.executable, "-m", "memory", "--home", str(home), "--backend", "auto", "mcp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    assert server.stdin is not None
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}
    server.stdin.write(orjson.dumps(request) + b"\n")
    server.stdin.flush()
    assert server.stdout is not None
    assert orjson.loads(server.stdout.readline())["id"] == 1  # serving, store open
    _, err = server.communicate(timeout=60)  # closes stdin
    assert server.returncode == 0 and b"Traceback" not in err, err.decode()
    # The graph was closed: another process can hold it now.
    done = dualmem("--home", str(home), "--backend", "graph", "status", "--json")
    assert done.returncode == 0, done.stderr
