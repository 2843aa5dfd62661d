"""``dualmem migrate --to GRAPH``: move a home's memory to another graph. The journal first
takes in what only the home's graph holds, then the ``Migrator`` replays it into the other
graph with the ledger (resumable, verified, idempotent), with the history the journal lacks;
a move to the other embedded engine runs in a process of its own (the two engines cannot share
one)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from backends.errors import MigrationError
from backends.graph.history import KeptFact, dump_history
from backends.graph.kuzu import engines
from memory.store import graphs
from memory.store.config import Config
from memory.store.migration import migrate_home
from migrate import Progress


@dataclass(frozen=True)
class Departure:
    note: str
    """what was done with the journal"""
    history: list[KeptFact] | None
    """the graph's retired facts, None when it is held elsewhere (they stay there)"""


@dataclass(frozen=True)
class Move:
    """What a move did (or, previewed, would do)."""

    report: dict[str, Any]
    """the replay's report (``MigrateResult.to_json``)"""
    summary: str
    where: str
    """the graph moved to"""
    journal: str
    """what was done with the journal (``Departure.note``)"""
    setting: str
    """what points the home at the graph moved to"""

    def to_json(self) -> dict[str, Any]:
        return self.report | {"to": self.where, "journal": self.journal}

    def describe(self) -> str:
        return (f"{self.journal}\nto {self.where}: {self.summary}\nnext: point the home at it "
                f"({self.setting})")


async def take_in_graph(config: Config) -> Departure:
    """Before the home's memory moves to another graph: bring memories only its graph holds
    (written with ``--backend graph``) into the journal, which the move replays, and read the
    history the journal lacks (retired facts). A graph another process holds is left to it
    (its holder keeps the journal whole), its history with it."""
    from memory.store.dual import open_dual

    store = await open_dual(config)
    try:
        if not store.holds_graph:
            return Departure(f"the journal moves as it is, the graph's history stays "
                             f"({store.reason})", None)
        await store.catch_up()
        return Departure("the journal took in the graph's memories first",
                         await store.retired_facts())
    finally:
        await store.aclose()


async def move_home(config: Config, destination: Config, *, preview: bool = False,
                    progress: Progress | None = None) -> Move:
    """Replay the home's memory (the journal, having taken in what only the graph held) into
    the graph of ``destination`` (``graphs.retarget``), with the ledger."""
    departure = (Departure("nothing changed (a dry run)", None) if preview
                 else await take_in_graph(config))
    history = departure.history
    if destination.graph_url is None and engines.loaded() not in (None,
                                                                 destination.graph_engine):
        # This process loaded the other embedded engine: the two cannot share a process.
        data = _move_in_own_process(config, destination.graph_engine, preview=preview,
                                    history=history)
        summary = (f"{'would write' if preview else 'wrote'} {data['written']} of "
                   f"{data['scanned']} episodes ({data['unchanged']} unchanged), in a process "
                   f"of its own ({destination.graph_engine})")
        if data.get("history"):
            summary += (f"; history: {data['history']['retired']} retired facts, "
                        f"{data['history']['written']} written")
    else:
        result = await migrate_home(destination, preview=preview, progress=progress,
                                    history=history, moving=True)
        data, summary = result.to_json(), result.summary()
    return Move(data, summary, graphs.describe(destination), departure.note,
                _setting(destination))


def _setting(config: Config) -> str:
    if config.graph_url is not None:
        return f"DUALMEM_GRAPH_URL={config.graph_url} or --graph-url"
    return f"DUALMEM_GRAPH_ENGINE={config.graph_engine} or --graph-engine"


def _move_in_own_process(config: Config, engine: str, *, preview: bool,
                         history: Sequence[KeptFact] | None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DUALMEM_GRAPH_URL", "DUALMEM_GRAPH_ENGINE")}
    with tempfile.TemporaryDirectory(prefix="dualmem-move-") as folder:
        carried = []
        if history is not None:
            (file := Path(folder) / "history.json").write_bytes(dump_history(history))
            carried = ["--history", str(file)]
        command = [sys.executable, "-m", "memory", "--home", str(config.home), "--graph-engine",
                   engine, "--json", "migrate", "--moving", *(["--dry-run"] if preview else []),
                   *carried]
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    try:
        data: dict[str, Any] = orjson.loads(done.stdout)
    except orjson.JSONDecodeError:
        raise MigrationError(f"the migration to {engine} failed: "
                             f"{done.stderr.strip() or done.returncode}") from None
    if "error" in data:
        raise MigrationError(f"the migration to {engine} failed: {data['error']['message']}")
    return data
