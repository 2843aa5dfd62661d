"""The graph's gain reaches every process: a memory that shares no word with a question, linked
to it only through an entity and a fact (or the reply to a matching turn of a conversation), is
found by the process holding the graph and by a ``dualmem search`` run meanwhile in another
process, which answers from the journal's index."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import orjson

from backends.model import Episode
from backends.protocol import upsert_all
from memory.store.dual import DualBackend
from memory.store.selection import open_memory

REPO = Path(__file__).resolve().parents[2]
GROUP = "shop"
QUESTION = "What goes wrong with InvoiceBuilder?"
DISCOVERY = Episode.create(
    group_id=GROUP, kind="codebase_discovery", name="src/billing/invoice.py", key="invoice",
    body={"file": "src/billing/invoice.py",
          "description": "Defines `InvoiceBuilder`, which turns rows into documents"})
# Names the file, not the class: one fact (the discovery's file -> class) away from the question.
GOTCHA = Episode.create(group_id=GROUP, kind="gotcha", name="handles leak", key="leak",
                        body="src/billing/invoice.py leaks file handles on a cancelled request")
OTHERS = [Episode.create(group_id=GROUP, kind="gotcha", name=f"other {n}", key=f"other {n}",
                         body=f"src/mail/outbox{n}.py leaks file handles on a cancelled request")
          for n in range(5)]


def search_in_another_process(home: Path, question: str = QUESTION) -> list[tuple[str, str]]:
    done = subprocess.run(
        [sys.executable, "-m", "memory", "--home", str(home), "search", question,
         "--group", GROUP, "--json"],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=True)
    return [(hit["episode"]["id"], hit["layer"]) for hit in orjson.loads(done.stdout)["hits"]]


async def test_a_memory_one_fact_away_is_found_without_the_graph(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with open_memory(home, "auto") as store:
        assert isinstance(store, DualBackend) and store.holds_graph
        await upsert_all(store, [DISCOVERY, GOTCHA, *OTHERS])
        held = [hit.episode.id for hit in await store.search(QUESTION, group_ids=[GROUP])]
        other = await asyncio.to_thread(search_in_another_process, home)
    assert {layer for _, layer in other} == {"file"}  # the graph was held here
    assert GOTCHA.id in held
    assert GOTCHA.id in [key for key, _ in other]
    assert not {e.id for e in OTHERS} & {key for key, _ in other}


TALK = [Episode.parse(id=f"chat:s1:{n}", group_id=GROUP, kind="message", name=f"message {n}",
                      body=body)
        for n, body in enumerate(["Which queue do the refund jobs use?",
                                  "The slow lane, since March",
                                  "Thanks, noted"])]


async def test_the_reply_to_a_matching_message_is_found_without_the_graph(tmp_path: Path
                                                                          ) -> None:
    home = tmp_path / "home"
    async with open_memory(home, "auto") as store:
        assert isinstance(store, DualBackend) and store.holds_graph
        await upsert_all(store, [*TALK, *OTHERS])
        held = [hit.episode.id for hit in await store.search("refund queue", group_ids=[GROUP])]
        other = await asyncio.to_thread(search_in_another_process, home, "refund queue")
    assert {layer for _, layer in other} == {"file"}
    assert "chat:s1:1" in held
    assert "chat:s1:1" in [key for key, _ in other]
