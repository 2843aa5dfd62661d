"""Writers at once through ``auto`` (4 and 8 processes; through the Python API and through the
CLI) while the process holding the graph is killed with ``kill -9`` mid-run: every write
acknowledged is there exactly once afterwards, in the journal and (once a process has held the
graph again) in the graph; every store opens; nothing is refused. How long the graph took to be
served again after the kill is reported with the figures."""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest

from faults.children import child_env, script, sigkill
from faults.harness import (
    ITERATIONS,
    WRITER_PATIENCE,
    Outcome,
    converged,
    record,
    run_writer,
    stored,
    writer,
)
from faults.workload import Expectation, Tally, operations

OPERATIONS = min(30, 8 * ITERATIONS)  # per writer and round
ROUNDS = max(1, ITERATIONS // 4)  # each round starts 1 + N processes
CLI_ADDS = min(4, ITERATIONS)  # per CLI writer and round (a process each: ~1 s of CPU)
# 8 writers cost twice 4's processes for the same property: `make faults` (and `make slow`)
# run them; `make test` runs 4.
WRITERS = [4, pytest.param(8, marks=pytest.mark.slow)]


@contextlib.asynccontextmanager
async def holder(home: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """A process holding ``home``'s graph, caught up (killed at the end if still alive)."""
    child = await asyncio.create_subprocess_exec(
        *script("fault_child.py", "hold", str(home)), stdout=asyncio.subprocess.PIPE,
        env=child_env(), start_new_session=True)
    try:
        assert child.stdout is not None
        async with asyncio.timeout(WRITER_PATIENCE):
            assert (await child.stdout.readline()).decode().strip() == "ready"
        yield child
    finally:
        if child.returncode is None:
            child.kill()
        await child.wait()


@dataclass
class Heard(Outcome):
    """An outcome that says whenever its writer printed a line."""

    heard: asyncio.Event = field(default_factory=asyncio.Event)

    def read(self, line: str) -> None:
        super().read(line)
        self.heard.set()


async def kill_when(child: asyncio.subprocess.Process, writers: list[Outcome], at: int,
                    heard: asyncio.Event) -> float:
    """SIGKILL ``child`` once the writers have ``at`` acknowledgements between them; when."""
    while sum(len(o.acked) for o in writers) < at and not all(
            o.done or o.returncode is not None for o in writers):
        heard.clear()
        with contextlib.suppress(TimeoutError):  # a writer that died says nothing more
            await asyncio.wait_for(heard.wait(), 1.0)
    sigkill(child)
    return time.time()


async def graph_equals_files(home: Path, tally: Tally) -> list[str]:
    """Once a process has held the graph again (opened ``auto`` and closed it), the graph holds
    exactly what the journal holds: (id, hash) pairs of the files, checked against the graph."""
    settle = await asyncio.create_subprocess_exec(
        *script("fault_child.py", "settle", str(home)), stdout=asyncio.subprocess.PIPE,
        env=child_env())
    async with asyncio.timeout(WRITER_PATIENCE):
        out, _ = await settle.communicate()
    assert settle.returncode == 0 and out.decode().strip() == "settled", out
    files, opened = await stored(home, "file")
    graph, graph_opened = await stored(home, "graph")
    tally.add(opened)
    tally.add(graph_opened)
    pairs = sorted((e.id, e.content_hash()) for e in files)
    return [] if pairs == sorted((e.id, e.content_hash()) for e in graph) else [
        f"the graph holds {len(graph)} episodes, the journal {len(files)}"]


@pytest.mark.parametrize("writers", WRITERS)
async def test_writers_through_the_api_while_the_holder_is_killed(
    tmp_path: Path, writers: int, seed: int
) -> None:
    rng = random.Random(seed)
    home = tmp_path / "home"
    expectation = Expectation()
    for round_ in range(ROUNDS):
        work = {n: operations(seed, round_ * writers + n, OPERATIONS, scope=f"w{n}")
                for n in range(writers)}
        heard = asyncio.Event()
        outcomes: list[Outcome] = [Heard(heard=heard) for _ in range(writers)]
        at = rng.randrange(1, writers * OPERATIONS // 2)
        async with holder(home) as held:
            runs = [run_writer(writer(home, "auto", seed, round_ * writers + n, OPERATIONS,
                                      scope=f"w{n}"), outcome=outcomes[n])
                    for n in range(writers)]
            killed, *_ = await asyncio.gather(kill_when(held, outcomes, at, heard), *runs)
            assert isinstance(killed, float)  # kill_when's; gather types the rest alike
        tally = Tally(rounds=1)
        for n, outcome in enumerate(outcomes):
            tally.crashed += outcome.crashed
            tally.refused += len(outcome.refused)
            tally.notes += [f"writer {n} ended with {outcome.returncode} (done: {outcome.done}):"
                            f" {outcome.stderr.strip()[-400:]}"] * outcome.crashed
            # What a refusal said, so that a rare failure names its cause in the report.
            tally.notes += [f"writer {n} refused {number}: {message}"
                            for number, message in outcome.refused.items()]
            tally.acknowledged += sum(len(op.puts) + len(op.deletes) for op in work[n]
                                      if op.number in outcome.acked)
            outcome.expect(expectation, work[n])
        files, opened = await stored(home, "file")
        tally.add(opened)
        tally.add(expectation.check(files))
        tally.notes += await graph_equals_files(home, tally)
        served = [o.serving_since for o in outcomes if o.serving_since is not None]
        if served:
            converged(f"{writers} writers", min(served) - killed)
        record(f"{writers} writers", "api", tally)
        where = f"round {round_}, holder killed after {at} acknowledgements"
        assert tally.clean and not tally.refused and not tally.notes, f"{where}: {tally}"
        expectation = expectation.settle(files)


async def cli_writer(home: Path, name: str, adds: int, acked: dict[str, str],
                     failures: list[str]) -> None:
    """``dualmem add`` ``adds`` times, one process after another; acknowledged: id -> body."""
    for n in range(adds):
        body = f"{name} says {n}"
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "memory", "--home", str(home), "add", "--group", "cli",
            "--kind", "note", "--name", f"{name} {n}", "--body", body, "--key", f"{name}-{n}",
            "--json", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=child_env())
        try:
            async with asyncio.timeout(WRITER_PATIENCE):
                out, err = await child.communicate()
        finally:
            if child.returncode is None:  # hung: a failure, never a hung suite
                child.kill()
                await child.wait()
        if child.returncode == 0:
            acked[orjson.loads(out)["id"]] = body
        else:
            failures.append(f"{name} {n}: exit {child.returncode}: {err.decode()[-400:]}")


@pytest.mark.parametrize("writers", WRITERS)
async def test_writers_through_the_cli_while_the_holder_is_killed(
    tmp_path: Path, writers: int, seed: int
) -> None:
    rng = random.Random(seed)
    home = tmp_path / "home"
    acked: dict[str, str] = {}
    for round_ in range(ROUNDS):
        failures: list[str] = []
        before = len(acked)
        async with holder(home) as held:
            adds = [cli_writer(home, f"r{round_}w{n}", CLI_ADDS, acked, failures)
                    for n in range(writers)]
            await asyncio.sleep(rng.uniform(0.0, 2.0))
            sigkill(held)
            await asyncio.gather(*adds)
        tally = Tally(rounds=1, acknowledged=len(acked) - before, refused=len(failures))
        files, opened = await stored(home, "file")
        tally.add(opened)
        found = {e.id: e.body for e in files if e.group_id == "cli"}
        tally.lost = sum(found.get(key) != body for key, body in acked.items())
        tally.torn = len(found.keys() - acked.keys())
        tally.notes += await graph_equals_files(home, tally)
        record(f"{writers} writers", "cli", tally)
        assert not failures, failures
        assert tally.clean and not tally.notes, f"round {round_}: {tally}"
