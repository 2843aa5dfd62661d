"""Two processes on one home, one holding the graph and one not, take random steps; after each,
both read exactly what one model holds: every process sees every acknowledged write at once."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from backends.model import Episode
from memory.store.config import Config
from memory.store.dual import DualBackend
from memory.store.selection import open_backend

IDS = st.sampled_from(["a1", "a2", "B:3", "b4"])
episodes = st.builds(
    Episode,
    id=IDS,
    group_id=st.sampled_from(["g_one", "g-two"]),
    kind=st.sampled_from(["note", "pattern"]),
    name=st.sampled_from(["first", "second"]),
    body=st.text("abc xyz", max_size=20),
    created_at=st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1),
                            timezones=st.just(UTC)),
)

# The other process: answers one JSON command per line through ``auto``, never holding the graph.
CHILD = """
import asyncio, sys, orjson
from backends.model import Episode
from memory.store.selection import open_memory
async def main():
    async with open_memory(sys.argv[1], "auto") as store:
        print(orjson.dumps({"holds": store.holds_graph}).decode(), flush=True)
        while line := await asyncio.to_thread(sys.stdin.readline):
            op = orjson.loads(line)
            if op["do"] == "upsert":
                receipt = await store.upsert(Episode.model_validate(op["episode"]))
                answer = {"pending": receipt.pending}
            elif op["do"] == "delete":
                answer = {"existed": await store.delete(op["id"])}
            else:
                answer = {"episodes": [e.to_json() async for e in store.scan()],
                          "count": await store.count()}
            print(orjson.dumps(answer).decode(), flush=True)
asyncio.run(main())
"""


class TwoProcesses(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.folder = Path(tempfile.mkdtemp(prefix="dualmem-two-"))
        self.store: DualBackend = self.loop.run_until_complete(self._open())
        self.child = subprocess.Popen([sys.executable, "-c", CHILD, str(self.folder)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.ask(None) == {"holds": False}
        self.model: dict[str, Episode] = {}

    async def _open(self) -> DualBackend:
        store, _ = await open_backend(Config(home=self.folder))
        assert isinstance(store, DualBackend) and store.holds_graph
        await store.catch_up()
        return store

    def ask(self, command: dict[str, Any] | None) -> Any:
        assert self.child.stdin is not None and self.child.stdout is not None
        if command is not None:
            self.child.stdin.write(orjson.dumps(command).decode() + "\n")
            self.child.stdin.flush()
        return orjson.loads(self.child.stdout.readline())

    @rule(episode=episodes)
    def holder_upserts(self, episode: Episode) -> None:
        receipt = self.loop.run_until_complete(self.store.upsert(episode))
        assert (receipt.layer, receipt.pending) == ("graph", False)
        self.model[episode.id] = episode

    @rule(episode=episodes)
    def other_upserts(self, episode: Episode) -> None:
        assert self.ask({"do": "upsert", "episode": episode.to_json()}) == {"pending": True}
        self.model[episode.id] = episode

    @rule(episode_id=IDS)
    def holder_deletes(self, episode_id: str) -> None:
        existed = self.loop.run_until_complete(self.store.delete(episode_id))
        assert existed == (self.model.pop(episode_id, None) is not None)

    @rule(episode_id=IDS)
    def other_deletes(self, episode_id: str) -> None:
        answer = self.ask({"do": "delete", "id": episode_id})
        assert answer == {"existed": self.model.pop(episode_id, None) is not None}

    @invariant()
    def both_read_what_the_model_holds(self) -> None:
        expected = sorted(self.model.values(), key=lambda e: (e.created_at, e.id))

        async def holder_view() -> list[Episode]:
            return [episode async for episode in self.store.scan()]

        assert self.loop.run_until_complete(holder_view()) == expected
        assert self.store.layer_in_use == "graph"
        seen = self.ask({"do": "scan"})
        assert [Episode.model_validate(e) for e in seen["episodes"]] == expected
        assert seen["count"] == len(expected)

    def teardown(self) -> None:
        self.child.stdin.close()  # type: ignore[union-attr]
        self.child.wait(timeout=60)
        self.child.stdout.close()  # type: ignore[union-attr]
        self.loop.run_until_complete(self.store.aclose())
        self.loop.close()
        shutil.rmtree(self.folder, ignore_errors=True)


TestTwoProcesses = TwoProcesses.TestCase
# Each example starts a process: a few long runs rather than many short ones.
TestTwoProcesses.settings = settings(
    max_examples=min(6, settings().max_examples), stateful_step_count=25
)
