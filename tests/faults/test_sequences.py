"""Sequences of everyday commands on one home, each a ``dualmem`` command line: writes through
either layer, ``migrate`` (with ``--prune``), a holder killed, ``repair``, deletes through the
CLI and by hand, the journal's index deleted. After every step the journal holds exactly what
was written and not deleted, and once a command has held the graph, so does the graph: no
command may lose a memory or bring a deleted one back.

A fixed sequence from the red team's report opens the family (``migrate --prune`` in ``auto``
deleted every migrated memory from both layers); random sequences follow, ``ITERATIONS`` of
them.

The command lines run in this process, as one-shot processes would (each opens the store and
closes it): a process each added only its start-up, a few seconds on a loaded machine. The
holder that is killed is a process of its own."""

from __future__ import annotations

import io
import random
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from fallback.index import FILE as INDEX_FILE
from fallback.layout import Layout
from faults.children import child_env, script
from faults.harness import ITERATIONS, record
from faults.workload import Tally
from memory.cli import main
from memory.store.config import Config

GROUP = "seq"
STEPS = 10
"""commands per random sequence (each followed by one or two to check)"""


def dualmem(home: Path, *argv: str, code: int | None = 0) -> Any:
    """``dualmem --home HOME ARGV --json`` run here; its JSON document."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        returned = main(["--home", str(home), *argv, "--json"])
    assert code is None or returned == code, (argv, returned, err.getvalue()[-2000:])
    printed = out.getvalue()
    return orjson.loads(printed) if printed.strip() else {"exit": returned}


def listed(home: Path, layer: str) -> dict[str, str]:
    """id -> body of every episode of the group, as ``layer`` lists them."""
    found = dualmem(home, "--backend", layer, "list", "--group", GROUP)["episodes"]
    return {episode["id"]: episode["body"] for episode in found}


def add(home: Path, layer: str, key: str, body: str) -> str:
    stored = dualmem(home, "--backend", layer, "add", "--group", GROUP, "--kind", "pattern",
                     "--name", key, "--body", body, "--key", key)
    return str(stored["id"])


def test_migrate_prune_in_auto_is_refused_and_keeps_every_memory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    written = {add(home, "file", key, f"pattern {key}"): f"pattern {key}" for key in "abc"}
    assert dualmem(home, "migrate")["written"] == 3
    refused = dualmem(home, "migrate", "--prune", code=1)
    assert "not pruning" in refused["error"]["message"]
    dualmem(home, "status")  # holds the graph: it used to follow the pruned journal
    assert listed(home, "auto") == written
    assert listed(home, "graph") == written
    assert listed(home, "file") == written


@dataclass
class Sequence:
    """One home driven by random everyday commands; what it must hold after each."""

    home: Path
    rng: random.Random
    expected: dict[str, str] = field(default_factory=dict)
    held: bool = False
    """a command has held the graph since the last write: the graph must equal the journal"""
    tally: Tally = field(default_factory=lambda: Tally(rounds=1))
    done: list[str] = field(default_factory=list)

    def step(self, number: int) -> None:
        action = self.rng.choice(["add auto", "add file", "add file", "delete", "delete by hand",
                                  "migrate", "prune", "status", "repair", "forget index",
                                  "hold and kill"])
        self.done.append(action)
        getattr(self, "_" + action.replace(" ", "_"))(number)
        self.check()

    def _add_auto(self, number: int) -> None:
        self._add("auto", number)

    def _add_file(self, number: int) -> None:
        self._add("file", number)

    def _add(self, layer: str, number: int) -> None:
        key = f"k{self.rng.randrange(6)}"
        body = f"pattern {key} written at step {number}"
        self.expected[add(self.home, layer, key, body)] = body
        self.tally.acknowledged += 1
        self.held = False  # a one-shot command writes the journal; the graph follows later

    def _delete(self, number: int) -> None:
        if self.expected:
            key = self.rng.choice(sorted(self.expected))
            dualmem(self.home, "delete", key)
            del self.expected[key]
            self.tally.acknowledged += 1
            self.held = False

    def _delete_by_hand(self, number: int) -> None:
        if self.expected:
            key = self.rng.choice(sorted(self.expected))
            Layout(Config(home=self.home).files_dir).episode_path(GROUP, key).unlink()
            del self.expected[key]
            self.tally.acknowledged += 1
            self.held = False

    def _migrate(self, number: int) -> None:
        dualmem(self.home, "migrate")

    def _prune(self, number: int) -> None:
        dualmem(self.home, "migrate", "--prune", code=1)

    def _status(self, number: int) -> None:
        dualmem(self.home, "status")
        self.held = True

    def _repair(self, number: int) -> None:
        dualmem(self.home, "repair")
        self.held = True

    def _forget_index(self, number: int) -> None:
        for leftover in Config(home=self.home).files_dir.glob(INDEX_FILE + "*"):
            leftover.unlink()

    def _hold_and_kill(self, number: int) -> None:
        with subprocess.Popen(script("fault_child.py", "hold", str(self.home)),
                              stdout=subprocess.PIPE, env=child_env()) as holder:
            assert holder.stdout is not None
            ready = holder.stdout.readline()
            holder.kill()
        self.held = ready.strip() == b"ready"

    def check(self) -> None:
        # A one-shot `auto` command answers from the journal, which `file` lists as it is.
        layers = ["file", *(["graph"] if self.held else [])]
        for layer in layers:
            found = listed(self.home, layer)
            lost = {key for key, body in self.expected.items() if found.get(key) != body}
            back = found.keys() - self.expected.keys()
            self.tally.lost += len(lost) + len(back)
            if lost or back:
                self.tally.notes.append(
                    f"after {' / '.join(self.done)}: {layer} lacks {sorted(lost)}, holds "
                    f"deleted or unknown {sorted(back)}")


def test_random_sequences_of_everyday_commands_lose_nothing(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    total = Tally()
    for round_ in range(ITERATIONS):
        sequence = Sequence(tmp_path / f"home-{round_}", rng)
        dualmem(sequence.home, "init")
        for number in range(STEPS):
            sequence.step(number)
        total.add(sequence.tally)
    record("sequences", "auto", total)
    assert total.clean, total.notes
