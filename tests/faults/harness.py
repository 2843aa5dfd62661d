"""Driving the writer child (``fault_child.py``) and checking a store against what it
acknowledged; the figures every family adds up (printed at the end of the run).

A layer joins every family with one entry in ``LAYERS``: the name ``--backend`` takes
(children open it with ``open_memory(home, layer)``). The dual store is ``"auto"``.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from backends.errors import DualmemError
from backends.model import Episode
from faults.children import child_env, script, sigkill
from faults.workload import SHARED, Expectation, Operation, Tally
from memory.store.selection import open_memory

LAYERS = ["file", "graph"]
ITERATIONS = int(os.environ.get("DUALMEM_FAULT_ITERATIONS", "2"))
"""rounds per family and layer: a few in the normal run, hundreds with ``make faults``"""

WRITER_PATIENCE = 900.0
"""a bound on one writer child, so that a hung one fails the test instead of hanging the suite"""

FIGURES: dict[tuple[str, str], Tally] = {}
"""(family, layer) -> what it did, summed over its rounds"""


CONVERGENCE: dict[str, list[float]] = {}
"""family -> seconds from killing the graph's holder until another process served the graph"""


def record(family: str, layer: str, tally: Tally) -> None:
    FIGURES.setdefault((family, layer), Tally()).add(tally)


def converged(family: str, seconds: float) -> None:
    CONVERGENCE.setdefault(family, []).append(seconds)


@dataclass
class Outcome:
    """What a writer child said and how it ended."""

    acked: set[int] = field(default_factory=set)
    refused: dict[int, str] = field(default_factory=dict)
    unopened: str | None = None
    """dualmem's error that kept the writer from opening the store"""
    ready: bool = False
    done: bool = False
    killed: bool = False
    returncode: int | None = None
    stderr: str = ""
    state: dict[str, object] | None = None
    """what a ``state`` child printed after the writer, when the test asked for one"""
    serving_since: float | None = None
    """when a writer through ``auto`` began to answer from the graph (wall clock)"""

    def read(self, line: str) -> None:
        word, _, rest = line.partition(" ")
        if word == "ack":
            self.acked.add(int(rest))
        elif word == "refused":
            number, _, message = rest.partition(" ")
            self.refused[int(number)] = message
        elif word == "unopened":
            self.unopened = rest
        elif word == "ready":
            self.ready = True
        elif word == "done":
            self.done = True
        elif word == "graph":
            self.serving_since = float(rest)
        elif line.startswith("{"):
            self.state = orjson.loads(line)

    @property
    def crashed(self) -> bool:
        """Ended other than by finishing or by our SIGKILL: the host process died."""
        if self.killed and self.returncode == -signal.SIGKILL:
            return False
        return self.returncode != 0 or not self.done

    def expect(self, expectation: Expectation, operations: Sequence[Operation]) -> None:
        """Tell ``expectation`` what each operation's outcome promised."""
        for operation in operations:
            if operation.number in self.acked:
                expectation.acknowledged(operation)
            elif operation.number in self.refused:
                expectation.uncertain(operation)
            else:  # under way when the writer died or stopped: nothing after it began
                expectation.uncertain(operation)
                return



async def run_writer(
    argv: Sequence[str],
    *,
    kill_after: int | None = None,
    delay: float = 0.0,
    outcome: Outcome | None = None,
) -> Outcome:
    """Run a writer child; with ``kill_after``, SIGKILL it ``delay`` seconds after its
    ``kill_after``-th acknowledgement (0: once it is ready). Every line it printed counts, in
    ``outcome`` (given: watched while the child runs)."""
    outcome = Outcome() if outcome is None else outcome
    child = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=child_env(),
        start_new_session=True,
    )
    assert child.stdout is not None and child.stderr is not None
    errors = asyncio.ensure_future(child.stderr.read())
    try:
        async with asyncio.timeout(WRITER_PATIENCE):
            while line := await child.stdout.readline():
                outcome.read(line.decode().strip())
                if kill_after is not None and not outcome.killed and outcome.ready and (
                    len(outcome.acked) + len(outcome.refused) >= kill_after
                ):
                    await asyncio.sleep(delay)
                    sigkill(child)
                    outcome.killed = True
            outcome.returncode = await child.wait()
    finally:
        if child.returncode is None:  # a hung writer: a failure, but never a hung suite
            child.kill()
            await child.wait()
    outcome.stderr = (await errors).decode(errors="replace")
    return outcome


def writer(home: Path, layer: str, seed: int, round_: int, count: int, *,
           sizes: Sequence[int] = (200,), fsize: int = 0, stop_after: int = 1 << 30,
           scope: str = SHARED) -> list[str]:
    return script("fault_child.py", "write", str(home), layer, str(seed), str(round_), str(count),
                  ",".join(map(str, sizes)), str(fsize), str(stop_after), scope)


async def stored(home: Path, layer: str) -> tuple[list[Episode], Tally]:
    """Every episode the store at ``home`` holds, opened as ``layer`` in this process; the tally
    says whether it opened and whether scan and count agree."""
    tally = Tally()
    try:
        async with open_memory(home, layer) as store:
            episodes = [e async for e in store.scan()]
            count = await store.count()
    except DualmemError as exc:
        tally.unopenable = 1
        tally.notes.append(f"{home} does not open as {layer}: {exc}")
        return [], tally
    if count != len(episodes):
        tally.duplicated += abs(count - len(episodes))
        tally.notes.append(f"count says {count}, scan yields {len(episodes)}")
    return episodes, tally


def leftovers(home: Path) -> list[Path]:
    """Temp files of writers and COPY files of the graph still there once the store opened."""
    return sorted(p for p in home.rglob(".*") if p.suffix in (".tmp", ".csv"))


async def check_round(
    home: Path,
    layer: str,
    expectation: Expectation,
    operations: Sequence[Operation],
    outcome: Outcome,
) -> tuple[Tally, Expectation]:
    """Check the store a writer left at ``home`` (opened here, or as its ``state`` child saw
    it) against what it acknowledged; the tally, and the expectation the next round starts
    from."""
    tally = Tally(rounds=1, refused=len(outcome.refused) + (outcome.unopened is not None))
    if outcome.crashed:
        tally.crashed = 1
        tail = " | ".join(outcome.stderr.strip().splitlines()[-6:])
        tally.notes.append(f"writer ended with {outcome.returncode}: {tail}")
    outcome.expect(expectation, operations)
    tally.acknowledged = sum(len(op.puts) + len(op.deletes) for op in operations
                             if op.number in outcome.acked)
    if outcome.state is None:
        episodes, opened = await stored(home, layer)
        tally.add(opened)
        if opened.unopenable:
            return tally, expectation
        left = leftovers(home)
        tally.leftovers = len(left)
        tally.notes += [f"left behind: {path}" for path in left]
        tally.add(expectation.check(episodes))
        return tally, expectation.settle(episodes)
    if "error" in outcome.state:
        if outcome.unopened is None:  # it was there (the writer opened it) and is gone
            tally.unopenable = 1
            tally.notes.append(str(outcome.state["error"]))
        return tally, expectation
    pairs = [(str(key), str(digest)) for key, digest in outcome.state["episodes"]]  # type: ignore[attr-defined]
    tally.add(expectation.check_hashes(pairs))
    return tally, Expectation(dict(pairs))


def summary() -> list[str]:
    if not FIGURES:
        return []
    names = Tally.COUNTS
    lines = [f"{'family':<12}{'layer':<7}" + "".join(f"{name:>13}" for name in names)]
    for (family, layer), tally in sorted(FIGURES.items()):
        lines.append(f"{family:<12}{layer:<7}"
                     + "".join(f"{getattr(tally, name):>13}" for name in names))
    lines.append("rounds: writer processes (hostile: examples; links: planted homes); "
                 "acknowledged: writes and deletes acknowledged (hostile: values accepted and "
                 "read back exactly)")
    for family, seconds in sorted(CONVERGENCE.items()):
        ordered = sorted(seconds)
        lines.append(f"{family}: the graph served again {ordered[len(ordered) // 2]:.1f} s "
                     f"(median; max {ordered[-1]:.1f} s, {len(ordered)} rounds) after its "
                     f"holder was killed")
    return lines
