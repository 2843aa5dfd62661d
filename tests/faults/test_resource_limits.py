"""Resource limits, through every layer: a writer under ``ulimit -v`` (Kùzu cannot map its
file), ``ulimit -n`` (few file handles) or ``RLIMIT_FSIZE`` (``ulimit -f``) never crashes,
refuses by name what it cannot do, loses nothing it acknowledged, and never takes a sound
graph for a damaged one: no ``graph.damaged-*`` folder, the graph "out of resources" rather
than "corrupt", the journal serving meanwhile. Afterwards, without the limit, the store opens
and holds every acknowledged write."""

from __future__ import annotations

import random
import shlex
from pathlib import Path

import pytest

from backends.errors import OUT_OF_RESOURCES
from faults.harness import ITERATIONS, check_round, record, run_writer, writer
from faults.workload import Expectation, operations

OPERATIONS = 20
LIMITS = ["-v", "-n", "-f"]
"""address space (Kùzu maps 8 TiB of it to open its file), file handles, file size"""
NAMED = ("WriteFailed ", "BackendUnavailable ")


def limited(argv: list[str], limit: str, rng: random.Random) -> tuple[list[str], str]:
    """``argv`` under ``limit``, and the limit as ``ulimit`` would say it."""
    # -n: from as few as leave Python room to start to as many as the graph needs to write
    shell = "ulimit -v 4000000" if limit == "-v" else f"ulimit -n {rng.randrange(12, 40)}"
    return ["sh", "-c", f"{shell} && exec {shlex.join(argv)}"], shell


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("layer", ["auto", "graph", "file"])
async def test_a_resource_limit_refuses_by_name_loses_nothing_and_damages_nothing(
    tmp_path: Path, layer: str, limit: str, seed: int
) -> None:
    rng = random.Random(seed)
    home = tmp_path / "home"
    expectation = Expectation()
    for round_ in range(ITERATIONS):
        work = operations(seed, round_, OPERATIONS, body_bytes=(200, 60_000))
        if limit == "-f":
            size = rng.choice([20_000, 200_000, 4 << 20])
            argv = writer(home, layer, seed, round_, OPERATIONS, sizes=(200, 60_000),
                          fsize=size, stop_after=6)
            where = f"round {round_}, files limited to {size} bytes"
        else:
            argv, where = limited(writer(home, layer, seed, round_, OPERATIONS,
                                         sizes=(200, 60_000), stop_after=6), limit, rng)
            where = f"round {round_}, {where}"
        outcome = await run_writer(argv)
        for number, message in outcome.refused.items():
            assert message.startswith(NAMED), f"{where}, operation {number}: {message}"
        if outcome.unopened is not None:
            assert outcome.unopened.startswith("BackendUnavailable "), f"{where}: {outcome}"
            assert "corrupt" not in outcome.unopened, f"{where}: {outcome.unopened}"
        if limit == "-v" and layer == "graph":
            assert outcome.unopened is not None and OUT_OF_RESOURCES in outcome.unopened, where
        tally, expectation = await check_round(home, layer, expectation, work, outcome)
        aside = sorted(path.name for path in home.glob("graph.damaged-*"))
        tally.unopenable += len(aside)  # a sound graph taken for damaged: never to happen
        tally.notes += [f"{where}: the graph was moved aside as {name}" for name in aside]
        record(f"ulimit {limit}", layer, tally)
        assert tally.clean, f"{where}: {tally.notes}"
