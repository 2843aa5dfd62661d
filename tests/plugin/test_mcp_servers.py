"""``dualmem mcp``: real server processes on one home, each driven by the SDK's real client.

Many sessions, one memory: three servers at once, each writing and searching; every write any
of them acknowledged is found by every one of them, once (polled with a generous deadline;
how fast it shows up is the bench's business, not a correctness test's)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from mcp import Client

from memory.store.project import ensure_project_id
from plugin.processes import call, servers

SERVERS = 3
WRITES = 8
DEADLINE_S = 300.0  # a bound on waiting under load (two suites at once), not a timing claim
# One word per write, no two within a typo of each other, so a search for one finds it first.
WORDS = (
    "aardvark", "badger", "camel", "dingo", "eagle", "ferret", "gazelle", "heron", "ibis",
    "jackal", "koala", "lemur", "marmot", "narwhal", "ocelot", "pelican", "quokka", "raccoon",
    "salmon", "tapir", "urchin", "vulture", "walrus", "yak",
)


def initialised(tmp_path: Path) -> Path:
    home = tmp_path / "project" / ".dualmem"
    ensure_project_id(home / "project.json", "project")
    return home


async def _write_and_search(client: Client, index: int) -> dict[str, str]:
    """Gotchas written by server ``index`` (its word -> id), each followed by a search."""
    written = {}
    for n in range(WRITES):
        word = WORDS[index * WRITES + n]
        text = f"Lesson from server {index}: flush the {word} buffer first"
        saved = await call(client, "add_memory", kind="gotcha", text=text)
        written[word] = saved["id"]
        await call(client, "search_memories", query=word)
    return written


async def _everything_found(client: Client, written: dict[str, str], who: int) -> None:
    """Wait until server ``who`` finds every written memory, exactly once each."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        hits = await call(client, "search_memories", query="lesson flush buffer", limit=100)
        ids = [hit["id"] for hit in hits]
        assert len(ids) == len(set(ids)), "a memory was found twice"
        missing = set(written.values()) - set(ids)
        if not missing or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    lost = sorted(word for word, memory_id in written.items() if memory_id in missing)
    assert not missing, f"server {who} never found {len(missing)} acknowledged write(s): {lost}"
    assert set(ids) == set(written.values())


@pytest.mark.parametrize("backend", ["file", "auto"])
async def test_three_servers_on_one_home_are_one_memory(tmp_path: Path, backend: str) -> None:
    home = initialised(tmp_path)
    async with servers(home, backend, SERVERS) as clients:
        results = await asyncio.gather(
            *(_write_and_search(client, i) for i, client in enumerate(clients))
        )
        written = {word: memory_id for result in results for word, memory_id in result.items()}
        assert len(written) == SERVERS * WRITES and len(set(written.values())) == len(written)
        for who, client in enumerate(clients):
            await _everything_found(client, written, who)
        for client in clients:  # each finds any one write by its own word, first
            for word, memory_id in written.items():
                hits = await call(client, "search_memories", query=word, limit=3)
                assert [hit["id"] for hit in hits][:1] == [memory_id], (word, hits)
