"""Through MCP alone, on every layer, an agent finds, corrects, supersedes and forgets a memory
(``dualmem mcp`` driven by the official SDK's client over stdio)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from every_layer import command_line, layer
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memory.about import version
from memory.store.project import ensure_project_id
from plugin.processes import REPO, call, text_of

__all__ = ["layer"]


def _server(layer: str, home: Path) -> Client:
    python_path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "memory", *command_line(layer, home), "mcp"],
        env={**os.environ, "PYTHONPATH": python_path}, cwd=str(REPO))
    return Client(parameters, mode="legacy", read_timeout_seconds=120)


async def test_an_agent_curates_memory_through_mcp(layer: str, tmp_path: Path) -> None:
    home = tmp_path / "app" / ".dualmem"
    ensure_project_id(home / "project.json", "app")
    async with _server(layer, home) as client:
        assert client.server_info is not None and client.server_info.version == version()
        saved = await call(client, "add_memory", kind="gotcha",
                           text="the cache is flushed every hour")
        found = await call(client, "get_memory", id=saved["id"][:8])
        assert found["text"] == "the cache is flushed every hour"
        fixed = await call(client, "update_memory", id=saved["id"][:8],
                           text="the cache is flushed every minute", reason="measured")
        assert fixed["id"] == saved["id"]
        hits = await call(client, "search_memories", query="cache flushed minute")
        assert [hit["id"] for hit in hits] == [saved["id"]]
        listed = await call(client, "list_memories", kinds=["gotcha"])
        assert [memory["text"] for memory in listed] == ["the cache is flushed every minute"]

        await call(client, "add_memory", kind="decision", title="Cookies", decision_id="ADR-1",
                   text="Keep `SessionStore` in cookies")
        new = await call(client, "supersede_decision", decision="ADR-1", title="Redis",
                         text="Move `SessionStore` to Redis", decision_id="ADR-2")
        assert new["adr_id"] == "ADR-2" and new["status"] == "accepted"
        entities = await call(client, "search_entities", query="SessionStore")
        facts = await call(client, "search_facts", query="SessionStore", retired=True)
        if layer == "file":
            assert entities["entities"] == [] and "no knowledge graph" in entities["reason"]
        else:
            assert entities["entities"][0]["name"] == "SessionStore"
            governs = {(f["source"], f["invalid_at"] is None) for f in facts["facts"]
                       if f["name"] == "GOVERNS"}
            assert governs == {("ADR-1", False), ("ADR-2", True)}
        ended = await call(client, "deprecate_decision", decision="ADR-2")
        assert ended["status"] == "deprecated" and ended["invalid_at"]

        gone = await call(client, "forget_memory", id=saved["id"], reason="wrong")
        assert gone["id"] == saved["id"]
        assert await call(client, "search_memories", query="cache flushed minute") == []
        history = await call(client, "memory_history", id=saved["id"][:8])
        assert history["current"] is None
        assert [(c["change"], c["before"]["text"]) for c in history["changes"]] == [
            ("updated", "the cache is flushed every hour"),
            ("forgotten", "the cache is flushed every minute")]

        missing = await client.call_tool("get_memory", {"id": "zzzz"})
        assert missing.is_error and text_of(missing) == (
            "Error executing tool get_memory: no memory with id 'zzzz' (nor one starting so)")
