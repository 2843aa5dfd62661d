"""Hostile inputs, by category, through ``dualmem mcp``, driven by the official SDK's client over
stdio: every argument of every tool and the view resources. Each call answers, or fails as a
tool error with one line of dualmem's own; the server keeps serving; nothing outside the home
is touched; every memory it says it saved reads back holding what was sent.

Lone surrogates travel as JSON escapes (``"\\udc80"``) from a client that writes JSON as
JavaScript does (the Python SDK's own writer cannot encode them): such a request is answered with
an error naming the text, and the server answers the next one."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import orjson
import pytest
from anyio.streams.text import TextReceiveStream
from mcp import Client, MCPError
from mcp.client._transport import TransportStreams
from mcp.client.stdio import stdio_client
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter
from plugin.processes import REPO, server_parameters, servers, text_of

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


def curation_calls(value: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """The value in every argument of every curation tool (``value`` of any JSON type)."""
    yield "get_memory", {"id": value}
    yield "list_memories", {"kinds": [value], "spec": value, "limit": 500}
    yield "list_memories", {"kinds": value, "since": value, "limit": value}
    yield "update_memory", {"id": value, "text": value, "name": value, "reason": value}
    yield "forget_memory", {"id": value, "reason": value}
    yield "memory_history", {"id": value}
    yield "supersede_decision", {"decision": value, "title": value, "text": value,
                                 "decision_id": value}
    yield "deprecate_decision", {"decision": value, "reason": value}
    yield "search_entities", {"query": value, "limit": value}
    yield "search_facts", {"query": value, "limit": 200, "retired": value}
    yield "get_knowledge_gaps", {"focus": value, "max_questions": value}
    yield "capture_knowledge", {"category": "domain", "question": value, "answer": value}
    yield "capture_knowledge", {"category": value, "question": "why?", "answer": "because"}


WRONG_TYPES: list[Any] = [None, 0, -1, 10**30, 1.5, True, [], ["a", 1], {"id": "x"}]


async def test_hostile_values_through_the_curation_tools(home: Path, seed: int) -> None:
    """Every curation tool with every argument hostile (the categories' fragments, huge ones,
    ids that climb out of the home, prefixes that name many memories, values of the wrong
    type): each answers or fails with one line, the server serves on, and no memory is lost
    but those it said it forgot."""
    before = outside(home)
    tally = Tally()
    async with servers(home, "auto", 1) as (client,):
        kept = [(await call(client, "add_memory", {"kind": kind, "text": f"memory {n}", **extra},
                            tally))["id"]
                for n, (kind, extra) in enumerate([("gotcha", {}), ("gotcha", {}),
                                                   ("pattern", {}),
                                                   ("decision", {"title": "use sqlite"}),
                                                   ("decision", {"title": "use kuzu"})])]
        prefixes = sorted({key[:length] for key in kept for length in (1, 2)})
        hostile = [v for vs in CATEGORIES.values() for v in vs if _encodes(v)]
        forgotten: set[str] = set()
        for value in [*hostile, *SIZES.values(), *prefixes, *WRONG_TYPES]:
            for tool, arguments in curation_calls(value):
                answer = await call(client, tool, arguments, tally)
                if tool == "forget_memory" and answer is not None:
                    forgotten.add(answer["id"])
        assert await call(client, "get_role_constraints", {"role": "coach"}, tally)
    assert outside(home) == before
    async with open_memory(home, "auto") as store:
        for key in kept:
            assert (await store.get(key) is None) == (key in forgotten), key
    record("hostile mcp", "auto", tally)


@asynccontextmanager
async def escaping_stdio(home: Path) -> AsyncIterator[TransportStreams]:
    """``dualmem mcp`` on ``home``, spoken to as a JavaScript client speaks: JSON written by the
    standard library, which escapes a lone surrogate (``"\\udc80"``) where the SDK's writer
    cannot encode it."""
    process = await anyio.open_process(
        [sys.executable, "-m", "memory", "--home", str(home), "--backend", "auto", "mcp"],
        cwd=REPO, env=child_env())
    assert process.stdin is not None and process.stdout is not None
    read_in, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_out = anyio.create_memory_object_stream[SessionMessage](0)

    async def from_server() -> None:
        assert process.stdout is not None
        pending = ""
        async with read_in:
            async for chunk in TextReceiveStream(process.stdout):
                *lines, pending = (pending + chunk).split("\n")
                for line in filter(None, lines):
                    await read_in.send(SessionMessage(jsonrpc_message_adapter.validate_json(line)))

    async def to_server() -> None:
        assert process.stdin is not None
        async with write_out:
            async for message in write_out:
                data = message.message.model_dump(by_alias=True, exclude_unset=True, mode="json")
                await process.stdin.send(json.dumps(data).encode() + b"\n")

    async with process, anyio.create_task_group() as tasks:
        tasks.start_soon(from_server)
        tasks.start_soon(to_server)
        try:
            yield read_stream, write_stream
        finally:
            await process.stdin.aclose()  # the server ends when its stdin closes
            with anyio.fail_after(120):
                assert await process.wait() == 0
            tasks.cancel_scope.cancel()


async def test_a_request_holding_a_lone_surrogate_is_answered_and_the_server_serves_on(
    home: Path,
) -> None:
    tally = Tally()
    async with Client(escaping_stdio(home), mode="legacy", read_timeout_seconds=60) as client:
        requests: list[tuple[str, dict[str, Any]]] = [
            ("search_memories", {"query": "retry", "kinds": ["\udc80"]}),
            ("search_memories", {"query": "a\ud800b"}),
            ("add_memory", {"kind": "gotcha", "text": "\ud83d"}),
            ("get_role_constraints", {"role": "\udcff"}),
        ]
        for tool, arguments in requests:
            tally.rounds += 1
            # Before: no answer at all, and the client waited until its read timeout.
            with pytest.raises(MCPError, match="not valid UTF-8 text"):
                await client.call_tool(tool, arguments)
            tally.refused += 1
        assert await call(client, "add_memory", {"kind": "gotcha", "text": "caf\u00e9 \U0001f600"},
                          tally)
        found = await call(client, "search_memories", {"query": "caf\u00e9"}, tally)
        assert [hit["text"] for hit in found] == ["caf\u00e9 \U0001f600"]
    record("hostile mcp", "auto", tally)


def test_a_raw_request_holding_a_lone_surrogate_is_answered_even_with_an_unreadable_id(
    home: Path,
) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "memory", "--home", str(home), "--backend", "auto", "mcp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
        env=child_env())
    assert server.stdin is not None and server.stdout is not None
    # An answer that never comes must fail the test, not hang it: killed, the server's stdout
    # ends and the read below returns nothing.
    watchdog = threading.Timer(300, server.kill)
    watchdog.start()

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
        for number, (request_id, text) in enumerate(
            [(b"2", b"a\\ud800b"), (b'"\\udcff"', b"x"), (b"4", b"\\ud83d")]
        ):
            send(b'{"jsonrpc":"2.0","id":' + request_id + b',"method":"tools/call","params":'
                 b'{"name":"add_memory","arguments":{"kind":"gotcha","text":"' + text + b'"}}}')
            answer = orjson.loads(server.stdout.readline())
            assert answer["id"] == [2, None, 4][number], answer  # null: its id is unreadable
            assert "not valid UTF-8 text" in answer["error"]["message"], answer
        send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
              "params": {"name": "get_role_constraints", "arguments": {"role": "coach"}}})
        answer = orjson.loads(server.stdout.readline())
        assert answer["id"] == 5 and not answer["result"]["isError"], answer
    finally:
        _, err = server.communicate(timeout=120)
        watchdog.cancel()
    assert server.returncode == 0 and b"Traceback" not in err, err.decode()


@pytest.mark.parametrize("overrides", ["roles: " + "[" * 50_000 + "]" * 50_000, "fifo"])
async def test_a_bad_overrides_file_fails_only_the_tools_that_apply_it_and_is_logged_once(
    home: Path, tmp_path: Path, overrides: str
) -> None:
    bad = home / "entity-overrides.yaml"
    if overrides == "fifo":
        os.mkfifo(bad)  # read, it hung the server: every tool waited with it
    else:
        bad.write_text(overrides)
    tally = Tally()
    with (tmp_path / "server.log").open("w+") as log:
        async with Client(stdio_client(server_parameters(home, "auto"), errlog=log),
                          mode="legacy", read_timeout_seconds=60) as client:
            for tool, arguments in [("get_role_constraints", {"role": "player"}),
                                    ("get_task_context", {"task": "retry the calls"}),
                                    ("get_role_constraints", {"role": "coach"})]:
                assert await call(client, tool, arguments, tally) is None
            for tool, arguments in [("add_memory", {"kind": "gotcha", "text": "Retry the calls"}),
                                    ("search_memories", {"query": "retry calls"})]:
                assert await call(client, tool, arguments, tally)
        log.seek(0)
        said = log.read()
    assert said.count("the project's overrides are not applied") == 1, said
    assert str(bad) in said and "Traceback" not in said, said
    record("hostile mcp", "auto", tally)
