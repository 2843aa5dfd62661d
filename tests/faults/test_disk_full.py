"""A full disk, through one layer at a time: a write that does not fit raises ``WriteFailed``
(named, saying why), the process writing it never crashes, and nothing acknowledged before or
after is lost; the store opens afterwards.

Two ways to fill a disk: ``RLIMIT_FSIZE`` in the writer (no file it writes may grow past a
limit, rounds following one another on the same home), and, where mounting works here, a small
tmpfs mounted for the writer alone (a fresh full disk each round, read back by a second process
in the same mount namespace)."""

from __future__ import annotations

import random
import shlex
from pathlib import Path

import pytest

from faults import confine
from faults.children import script
from faults.harness import ITERATIONS, LAYERS, Outcome, check_round, record, run_writer, writer
from faults.workload import Expectation, operations

OPERATIONS = 30
STOP_AFTER = 6  # refusals before the writer stops (it tries more writes after the first)
# Bodies from small to over every per-file limit used below (the body limit is 1 MiB).
SIZES = (200, 4_000, 60_000, 200_000)
MiB = 1 << 20


def file_size_limit(home: Path, layer: str, rng: random.Random) -> int:
    """A limit some writes of this round fit under and others do not."""
    if layer == "file":
        return rng.choice([16_000, 100_000, 500_000])
    # The graph keeps room for its files to double (backends/graph/kuzu/space.py).
    largest = max((p.stat().st_size for p in (home / "graph").glob("*")), default=0)
    return 2 * max(largest, 2 * MiB) + rng.randrange(16 * MiB)


def assert_refusals_are_named(outcome: Outcome, where: str) -> None:
    for number, message in outcome.refused.items():
        assert message.startswith("WriteFailed "), f"{where}, operation {number}: {message}"
    if outcome.unopened is not None:
        assert outcome.unopened.startswith("BackendUnavailable "), f"{where}: {outcome.unopened}"


def on_tmpfs(size: int, home: Path, layer: str, seed: int, round_: int) -> list[str]:
    """Writer, then reader, in a mount namespace of their own with a tmpfs of ``size`` bytes
    at ``home``; the exit status is the writer's."""
    write = shlex.join(writer(home, layer, seed, round_, OPERATIONS, sizes=SIZES,
                              stop_after=STOP_AFTER))
    read = shlex.join(script("fault_child.py", "state", str(home), layer))
    program = (f"mount -t tmpfs -o size={size} tmpfs {shlex.quote(str(home))} || exit 97; "
               f"{write}; status=$?; {read}; exit $status")
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", program]


# A tmpfs needs a mount namespace of our own (root); RLIMIT_FSIZE works everywhere.
DISKS = ["file size", *(["tmpfs"] if "mount" in confine.modes() else [])]


@pytest.mark.parametrize("disk", DISKS)
@pytest.mark.parametrize("layer", LAYERS)
async def test_a_full_disk_refuses_by_name_and_loses_nothing(
    tmp_path: Path, layer: str, disk: str, seed: int
) -> None:
    rng = random.Random(seed)
    home = tmp_path / "home"
    expectation = Expectation()
    for round_ in range(ITERATIONS):
        work = operations(seed, round_, OPERATIONS, body_bytes=SIZES)
        if disk == "tmpfs":  # a fresh small disk each round, read back inside its namespace
            home = tmp_path / f"home-{round_}"
            home.mkdir()
            expectation = Expectation()
            size = rng.choice([1, 2, 4] if layer == "file" else [8, 16, 32]) * MiB
            where = f"round {round_}, a tmpfs of {size} bytes"
            outcome = await run_writer(on_tmpfs(size, home, layer, seed, round_))
        else:
            limit = file_size_limit(home, layer, rng)
            where = f"round {round_}, files limited to {limit} bytes"
            outcome = await run_writer(writer(home, layer, seed, round_, OPERATIONS,
                                              sizes=SIZES, fsize=limit, stop_after=STOP_AFTER))
        tally, expectation = await check_round(home, layer, expectation, work, outcome)
        record(disk, layer, tally)
        assert tally.clean, f"{where}: {tally}"
        assert_refusals_are_named(outcome, where)
