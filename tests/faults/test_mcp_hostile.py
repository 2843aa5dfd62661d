"""Hostile inputs, by category, through ``dualmem mcp``, driven by the official SDK's client over
stdio: every argument of every tool and the view resources. Each call answers, or fails as a
tool error with one line of dualmem's own; the server keeps serving; nothing outside the home
is touched; every memory it says it saved reads back holding what was sent.

Lone surrogates cannot travel as JSON-RPC (the client cannot encode them, the server's parser
refuses their escapes): sent raw, such a request goes unanswered by the SDK, and the server
answers the next one."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from mcp import Client
from plugin.processes import REPO, servers, text_of

from backends.model import Episode
from faults.children import child_env
from faults.harness import ITERATIONS, record
from faults.test_hostile import CATEGORIES, outside, plant
from faults.workload import Tally
from memory.store.project import ensure_project_id
from memory.store.selection import open_memory

MIXED = min(200, 5 * ITERATIONS)
"""random mixes of the categories' fragments, beside each fragment alone"""
SIZES = {"oversize": "x" * (2 << 20), "deeply nested": "[" * 100_000 + "]" * 100_000,
         "nested object": '{"a":' * 5_000 + "1" + "}" * 5_000}


def values(seed: int) -> list[str]:
    """Every fragment of every category that JSON can carry, random mixes, and big ones."""
    fragments = [v for vs in CATEGORIES.values() for v in vs if _encodes(v)]
    rng = random.Random(seed)
    mixed = ["".join(rng.sample(fragments, rng.randint(2, 3))) for _ in range(MIXED)]
    return [*fragments, *mixed, *SIZES.values()]


def _encodes(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def calls(value: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The value in every string argument of every tool."""
    yield "add_memory", {"kind": "gotcha", "text": value}
    yield "add_memory", {"kind": "pattern", "text": value, "spec": value}
    yield "add_memory", {"kind": "discovery", "file": value, "text": value}
    yield "add_memory", {"kind": "outcome", "task_id": value, "success": True, "text": value,
                         "title": value}
    yield "add_memory", {"kind": "decision", "title": value, "text": value,
                         "decision_id": value}
    yield "search_memories", {"query": value, "kinds": [value], "groups": [value]}
    yield "get_task_context", {"task": value, "feature": value, "tech_stack": value,
                               "last_failure": value, "task_id": value}
    yield "save_session_insights", {"what_worked": [value], "gotchas_encountered": [value],
                                    "files_understood": {value: value}}
    yield "get_session_history", {"spec": value}
    yield "get_latest_turn", {"feature_id": value, "task_id": value}
    yield "get_role_constraints", {"role": value}
    yield "get_quality_gates", {"task_type": value, "complexity": 3}


def strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, item in data.items():
            yield key
            yield from strings(item)
    elif isinstance(data, list):
        for item in data:
            yield from strings(item)


def holds(episode: Episode, value: str) -> bool:
    """The memory carries ``value`` (as sent, or trimmed of surrounding white space)."""
    texts = [episode.name, episode.body, *strings(episode.data)]
    return any(v in text for text in texts for v in {value, value.strip()} if v)


async def call(client: Client, tool: str, arguments: dict[str, Any], tally: Tally) -> Any:
    """The call's structured result, or None when it failed as a one-line tool error."""
    tally.rounds += 1
    result = await client.call_tool(tool, arguments)
    text = text_of(result)
    if result.is_error:
        tally.refused += 1
        assert text.startswith(f"Error executing tool {tool}: "), (tool, arguments, text[:300])
        assert "\n" not in text and "Traceback" not in text, (tool, text[:300])
        return None
    tally.acknowledged += 1
    content = result.structured_content
    return content["result"] if content and set(content) == {"result"} else content


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "app" / ".dualmem"
    ensure_project_id(folder / "project.json", "app")
    plant(folder)
    return folder


async def test_hostile_values_through_the_mcp_server(home: Path, seed: int) -> None:
    before = outside(home)
    saved: dict[str, str] = {}  # id -> the value last saved there (like texts are one memory)
    tally = Tally()
    async with servers(home, "auto", 1) as (client,):
        for value in values(seed):
            for tool, arguments in calls(value):
                answer = await call(client, tool, arguments, tally)
                if tool == "add_memory" and answer is not None:
                    saved[answer["id"]] = value
            uri = f"dualmem://groups/{quote(value, safe='')}/patterns.md"
            try:
                await client.read_resource(uri)
            except Exception as exc:  # the SDK raises the server's error: one line of ours
                assert "\n" not in str(exc) and "Traceback" not in str(exc), str(exc)[:300]
        assert await call(client, "get_role_constraints", {"role": "coach"}, tally)
    assert outside(home) == before
    async with open_memory(home, "auto") as store:
        for key, value in saved.items():
            episode = await store.get(key)
            assert episode is not None and holds(episode, value), (value[:80], episode)
    record("hostile mcp", "auto", tally)


def test_a_request_json_cannot_carry_goes_unanswered_and_the_server_serves_on(
    home: Path,
) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "memory", "--home", str(home), "--backend", "auto", "mcp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
        env=child_env())
    assert server.stdin is not None and server.stdout is not None

    def send(message: dict[str, Any] | bytes) -> None:
        assert server.stdin is not None
        server.stdin.write(message if isinstance(message, bytes) else orjson.dumps(message))
        server.stdin.write(b"\n")
        server.stdin.flush()

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}})
        assert orjson.loads(server.stdout.readline())["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for text in ("a\\ud800b", "\\udcff", "\\ud83d"):
            send(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_memory",'
                 b'"arguments":{"kind":"gotcha","text":"' + text.encode() + b'"}}}')
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "get_role_constraints", "arguments": {"role": "coach"}}})
        answer = orjson.loads(server.stdout.readline())
        assert answer["id"] == 3 and not answer["result"]["isError"], answer
    finally:
        _, err = server.communicate(timeout=120)
    assert server.returncode == 0 and b"Traceback" not in err, err.decode()
