"""Resource limits, through every layer: a writer under ``ulimit -v`` (Kùzu cannot map its
file), ``ulimit -n`` (few file handles) or ``RLIMIT_FSIZE`` (``ulimit -f``) never crashes,
refuses by name what it cannot do, loses nothing it acknowledged, and never takes a sound
graph for a damaged one: no ``graph.damaged-*`` folder, the graph "out of resources" rather
than "corrupt", the journal serving meanwhile. Afterwards, without the limit, the store opens
and holds every acknowledged write."""

from __future__ import annotations

import errno
import os
import random
import shlex
from pathlib import Path

import pytest

from backends.errors import OUT_OF_RESOURCES, BackendUnavailable
from backends.graph import GraphBackend
from backends.graph.kuzu.database import Session
from faults.children import script
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


async def test_a_write_out_of_file_handles_as_it_reads_a_view_refuses_by_name(
        tmp_path: Path) -> None:
    """The file handles run out exactly as a write reads its view page (another thread held
    the last ones, under ``ulimit -n``): that write is refused by name and left undone, the
    next one stored."""
    outcome = await run_writer(script("starved_child.py", str(tmp_path), "gotchas.md"))
    assert not outcome.crashed, outcome.stderr
    assert outcome.refused[1].startswith("WriteFailed "), outcome.refused
    assert "Too many open files" in outcome.refused[1]
    assert outcome.acked == {2}
    assert outcome.state == {"episodes": ["starved-2"]}


@pytest.mark.parametrize(("layer", "module", "refusal"), [
    ("file", "fallback.writer", "WriteFailed "),  # imported on a process's first write
    ("auto", "fallback.writer", "WriteFailed "),
    ("graph", "decimal", "WriteFailed graph layer: "),  # the driver's, on its first query
])
async def test_a_write_out_of_file_handles_as_it_imports_a_module_refuses_by_name(
        tmp_path: Path, layer: str, module: str, refusal: str) -> None:
    """The file handles run out as a write imports a module it needs: the module's file cannot
    be opened. That write is refused by name, not a crash; the next one imports it and is
    stored."""
    assert (await run_writer(script("starved_child.py", str(tmp_path), "none.md", "write",
                                    layer))).acked == {1, 2}  # the home exists: only writes
    outcome = await run_writer(script("starved_child.py", str(tmp_path),
                                      f"import:{module}", "write", layer))
    assert not outcome.crashed, outcome.stderr
    assert outcome.refused[1].startswith(refusal), outcome.refused
    assert "Too many open files" in outcome.refused[1]
    assert outcome.acked == {2}
    assert outcome.state == {"episodes": ["starved-1", "starved-2"]}


async def test_a_graph_read_out_of_file_handles_is_out_of_resources_not_damage(
        tmp_path: Path) -> None:
    """A read whose process has no file handle left (the driver importing a module on its first
    query, say) is refused as out of resources; the graph is not taken for damaged and reads
    again."""
    graph = await GraphBackend.open(tmp_path / "graph")
    core = graph._core
    assert core is not None
    try:
        def starved(session: Session) -> None:
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), "decimal.py")

        with pytest.raises(BackendUnavailable, match=OUT_OF_RESOURCES):
            await core.read(starved)
        assert await graph.count() == 0
    finally:
        await graph.aclose()


async def test_an_open_out_of_file_handles_as_it_takes_in_a_view_is_unavailable(
        tmp_path: Path) -> None:
    """The handles run out as an open takes in a page a person edited: the layer is out of
    resources (it opens again once the limit allows), not a read-only home."""
    outcome = await run_writer(script("starved_child.py", str(tmp_path), "none.md"))
    assert outcome.acked == {1, 2}, outcome.stderr
    with (tmp_path / "files" / "views" / "g" / "gotchas.md").open("a") as page:
        page.write("- a bullet a person added\n")
    outcome = await run_writer(script("starved_child.py", str(tmp_path), "gotchas.md", "open"))
    assert not outcome.crashed, outcome.stderr
    assert outcome.unopened is not None, outcome
    assert outcome.unopened.startswith(f"BackendUnavailable file layer unavailable: "
                                       f"{OUT_OF_RESOURCES} "), outcome.unopened
