"""``kill -9`` at random points while a real child process writes to one layer: afterwards the
store opens, every acknowledged write is there exactly once (the newest acknowledged version of
each id, no acknowledged delete undone), nothing holds content no write had, and no temp or
COPY file of the dead writer is left. Rounds follow one another on the same home, so each also
recovers from the kills before it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from faults.harness import ITERATIONS, LAYERS, check_round, record, run_writer, writer
from faults.workload import Expectation, operations

OPERATIONS = 24  # per round: singles, rewrites, deletes and batches of the graph's bulk size


@pytest.mark.parametrize("layer", LAYERS)
async def test_kill_9_at_random_points_loses_nothing_acknowledged(
    tmp_path: Path, layer: str, seed: int
) -> None:
    rng = random.Random(seed)
    home = tmp_path / "home"
    expectation = Expectation()
    for round_ in range(ITERATIONS):
        kill_after = rng.randrange(OPERATIONS + 1)
        outcome = await run_writer(writer(home, layer, seed, round_, OPERATIONS),
                                   kill_after=kill_after, delay=rng.uniform(0.0, 0.05))
        tally, expectation = await check_round(
            home, layer, expectation, operations(seed, round_, OPERATIONS), outcome
        )
        record("kill -9", layer, tally)
        where = f"round {round_}, SIGKILL after {kill_after} answers"
        assert tally.clean, f"{where}: {tally}"
        assert not outcome.refused, f"{where}: a plain write was refused: {outcome.refused}"
