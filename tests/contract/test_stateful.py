"""Random upserts, deletes and reopens against every backend, checked after each step against a
plain dict: the store holds exactly what the model holds, in (created_at, id) order."""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from every_layer import FACTORIES, Factory
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from backends.model import Episode
from backends.protocol import MemoryBackend

STEP_LIMIT = 300.0  # seconds: far beyond any step on a loaded machine; a hang, not slowness
IDS = st.sampled_from(["a1", "a2", "B:3", "b4", "c5"])
episodes = st.builds(
    Episode,
    id=IDS,
    group_id=st.sampled_from(["g_one", "g-two"]),
    kind=st.sampled_from(["note", "pattern", "gotcha"]),
    name=st.sampled_from(["first", "second", "a name with spaces"]),
    body=st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40).filter(
        lambda body: "\x00" not in body
    ),
    source=st.sampled_from(["api", "cli", "manual"]),
    created_at=st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    ),
)


class AgreesWithADict(RuleBasedStateMachine):
    factory: Factory

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.folder = Path(tempfile.mkdtemp(prefix="dualmem-stateful-"))
        self.store: MemoryBackend = self.run(self.factory(self.folder / "memory"))
        self.model: dict[str, Episode] = {}

    def run(self, step: Any) -> Any:
        """Run one step; a step that never ends fails with every task's stack, not a hang."""

        async def bounded() -> Any:
            try:
                async with asyncio.timeout(STEP_LIMIT):
                    return await step
            except TimeoutError:
                for task in asyncio.all_tasks():
                    task.print_stack(file=sys.stderr)
                raise

        return self.loop.run_until_complete(bounded())

    @rule(episode=episodes)
    def upsert(self, episode: Episode) -> None:
        self.run(self.store.upsert(episode))
        self.model[episode.id] = episode

    @rule(episode_id=IDS)
    def delete(self, episode_id: str) -> None:
        assert self.run(self.store.delete(episode_id)) == (episode_id in self.model)
        self.model.pop(episode_id, None)

    @rule()
    def reopen(self) -> None:
        self.run(self.store.aclose())
        self.store = self.run(self.factory(self.folder / "memory"))

    @invariant()
    def holds_what_the_model_holds(self) -> None:
        async def observe() -> tuple[list[Episode], int, dict[str, Episode | None]]:
            scanned = [episode async for episode in self.store.scan()]
            got = {episode_id: await self.store.get(episode_id) for episode_id in self.model}
            return scanned, await self.store.count(), got

        scanned, count, got = self.run(observe())
        assert scanned == sorted(self.model.values(), key=lambda e: (e.created_at, e.id))
        assert count == len(self.model)
        assert got == self.model

    def teardown(self) -> None:
        self.run(self.store.aclose())
        self.loop.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _test_case(name: str, factory: Factory) -> type:
    fields = {"factory": staticmethod(factory)}
    machine = cast("type[AgreesWithADict]",
                   type(f"AgreesWithADict_{name}", (AgreesWithADict,), fields))
    case: type = machine.TestCase
    # Modest on purpose: a layer over an embedded database (Kùzu opened again at every
    # reopen) takes ten times as long per step as the files: a fifth of the profile's
    # examples there (8 by default, 20 with the ci profile), half for the files.
    share = 2 if name == "file" else 5
    case.settings = settings(  # type: ignore[attr-defined]
        max_examples=max(2, settings().max_examples // share), stateful_step_count=15
    )
    return case


# One test case per backend in FACTORIES.
for _name, _factory in FACTORIES.items():
    globals()[f"TestAgreesWithADict_{_name}"] = _test_case(_name, _factory)
del _name, _factory
