"""One memory in every process: what the graph's holder writes, every other process reads, and a
person's edit of a view reaches the graph and leaves it again."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from backends.graph import GraphBackend
from backends.model import Episode, natural_key, stable_id
from memory.store.config import Config
from memory.store.selection import open_backend, open_memory

GROUP = "proj"
HOLDER = """
import asyncio, sys
from backends.model import Episode
from memory.store.selection import open_memory
async def main():
    async with open_memory(sys.argv[1], "auto") as store:
        assert store.holds_graph
        for n in range(40):
            kind = "pattern" if n < 10 else "note"
            token = " zebracorn" if n == 33 else ""
            await store.upsert(Episode.create(group_id="proj", kind=kind, key=str(n),
                name=f"memory {n}", body=f"what the holder learned, number {n}{token}"))
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
asyncio.run(main())
"""
DEADLINE = 300.0  # a bound on waiting under load (each check starts a CLI process)
TEXT = "Always pin kuzu before upgrading graphiti"
HAND = stable_id(GROUP, "pattern", natural_key(TEXT))


def cli(home: Path, *args: str) -> tuple[int, Any]:
    done = subprocess.run([sys.executable, "-m", "memory", "--home", str(home), "--json", *args],
                          capture_output=True, text=True, timeout=120)
    return done.returncode, orjson.loads(done.stdout)


def eventually(check: Callable[[], bool]) -> bool:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.1)
    return check()


def test_another_process_reads_everything_the_holder_wrote(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with subprocess.Popen([sys.executable, "-c", HOLDER, str(home)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as holder:
        _run(holder, home)
    # The graph alone: everything the holder and the person wrote, the removed bullet gone.
    code, graph = cli(home, "--backend", "graph", "list", "--group", GROUP)
    assert code == 0 and graph["count"] == 40
    assert cli(home, "--backend", "graph", "get", HAND)[0] == 1


def _run(holder: subprocess.Popen[str], home: Path) -> None:
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "ready", holder.stderr and holder.stderr.read()

        code, listed = cli(home, "list", "--group", GROUP)
        assert code == 0 and listed["count"] == 40
        code, found = cli(home, "search", "zebracorn", "--group", GROUP)
        assert [hit["episode"]["name"] for hit in found["hits"]] == ["memory 33"]
        view = home / "files" / "views" / GROUP / "patterns.md"
        assert all(f"memory {n}" in view.read_text() for n in range(10))

        view.write_text(view.read_text() + f"- {TEXT}\n")
        assert eventually(lambda: cli(home, "get", HAND)[0] == 0)
        view.write_text(view.read_text().replace(f"- {TEXT}\n", ""))
        assert eventually(lambda: cli(home, "get", HAND)[0] == 1)
        holder.stdin.write("stop\n")
        holder.stdin.flush()
        assert holder.wait(timeout=60) == 0, holder.stderr and holder.stderr.read()
    finally:
        holder.kill()


async def test_a_one_shot_reader_takes_no_graph_lock_and_reads_everything(tmp_path: Path) -> None:
    async with open_memory(tmp_path, "auto") as holder:
        await holder.upsert(Episode.create(group_id=GROUP, kind="note", key="k", name="kept",
                                           body="held and written"))
    store, selection = await open_backend(Config(home=tmp_path), one_shot=True)
    try:
        assert selection.layer == "file" and "one-shot" in selection.reason
        assert [e.name async for e in store.scan()] == ["kept"]
        # The graph stays free for a long-running process.
        graph = await GraphBackend.open(Config(home=tmp_path).graph_dir)
        await graph.aclose()
    finally:
        await store.aclose()
