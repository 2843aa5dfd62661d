"""The curation commands on every layer, through ``main`` in this process (and $EDITOR as a
real process): edit, forget, restore and history, with ids given by a unique prefix."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest
from every_layer import command_line

from memory.about import version
from memory.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, orjson.loads(out) if out else None


def test_edit_forget_restore_history(layer: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    where = command_line(layer, tmp_path / "home")
    code, added = run(capsys, *where, "add", "--kind", "gotcha", "--name", "cache",
                      "--body", "the cache is flushed hourly")
    assert code == 0
    prefix = added["id"][:6]
    code, edited = run(capsys, *where, "edit", prefix, "--body", "the cache is flushed daily",
                       "--reason", "measured")
    assert code == 0 and edited["changed"] and edited["id"] == added["id"]
    assert run(capsys, *where, "get", prefix)[1]["episode"]["body"] == (
        "the cache is flushed daily")
    code, gone = run(capsys, *where, "forget", prefix, "--reason", "stale")
    assert code == 0 and gone["forgotten"] == [added["id"]]
    code, error = run(capsys, *where, "get", prefix)
    assert code == 1 and error["error"]["type"] == "UnknownId"
    code, history = run(capsys, *where, "history", prefix)
    assert code == 0 and history["current"] is None
    assert [(v["change"], v["reason"], v["episode"]["body"]) for v in history["versions"]] == [
        ("updated", "measured", "the cache is flushed hourly"),
        ("forgotten", "stale", "the cache is flushed daily")]
    code, back = run(capsys, *where, "restore", prefix)
    assert code == 0 and back["episode"]["body"] == "the cache is flushed daily"
    assert run(capsys, *where, "get", added["id"])[1]["episode"]["body"] == (
        "the cache is flushed daily")
    run(capsys, *where, "add", "--kind", "gotcha", "--name", "store",
        "--body", "`SessionStore` drops sessions past 4 KB")
    code, found = run(capsys, *where, "entities", "sessionstore")
    assert code == 0
    if layer == "file":
        assert found["items"] == [] and "no knowledge graph" in found["reason"]
    else:  # in auto, the command takes the graph (a write would), caught up to the journal
        assert [item["name"] for item in found["items"]] == ["SessionStore"]


def test_edit_in_the_editor_and_the_version(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    where = ["--home", str(tmp_path / "home"), "--backend", "file"]
    _, added = run(capsys, *where, "add", "--kind", "note", "--name", "n", "--body", "one")
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/one/two/' \"$1\"\n")
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    code, edited = run(capsys, *where, "edit", added["id"][:4])
    assert code == 0 and edited["episode"]["body"] == "two"
    code, again = run(capsys, *where, "edit", added["id"][:4], "--body", "two")
    assert code == 0 and not again["changed"]
    monkeypatch.delenv("EDITOR")
    code, error = run(capsys, *where, "edit", added["id"])
    assert code == 2 and "no $EDITOR is set" in error["error"]["message"]
    run(capsys, *where, "add", "--kind", "note", "--name", "n", "--body", "tw0")
    code, listed = run(capsys, *where, "dedupe", "--dry-run")
    assert code == 0 and listed["dry_run"] and len(listed["sets"]) == 0  # "two", "tw0": short
    for body in ("Retry flaky HTTP calls with backoff", "retry flaky HTTP calls with back-off"):
        run(capsys, *where, "add", "--kind", "note", "--name", "n", "--body", body)
    code, listed = run(capsys, *where, "dedupe", "--dry-run")
    assert [len(item["others"]) for item in listed["sets"]] == [1]
    code, merged = run(capsys, *where, "dedupe")
    assert code == 0 and not merged["dry_run"] and len(merged["sets"]) == 1
    assert run(capsys, *where, "dedupe", "--dry-run")[1]["sets"] == []
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"dualmem {version()}\n"


def test_add_without_a_key_is_the_memory_mcp_adds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memory.agent.memories import AgentMemory
    from memory.store.project import project_id
    from memory.store.selection import open_memory

    home = tmp_path / "home"
    where = ["--home", str(home), "--backend", "file"]
    _, first = run(capsys, *where, "add", "--kind", "gotcha", "--name", "rename",
                   "--body", "rename() is not atomic across file systems")
    _, again = run(capsys, *where, "add", "--kind", "gotcha", "--name", "rename",
                   "--body", "Rename() is NOT atomic across file systems!")
    assert again["id"] == first["id"]

    async def through_mcp() -> tuple[str, int]:
        async with open_memory(home=home, backend="file") as store:
            mcp = await AgentMemory(store, project_id(home)).add_gotcha(
                "rename() is not atomic across file systems")
            return mcp.id, await store.count()

    assert asyncio.run(through_mcp()) == (first["id"], 1)
