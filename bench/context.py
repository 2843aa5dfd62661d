"""Context assembly at 10k stored memories on each layer: latency, and the score calibration
behind the relevance thresholds.

    python -m bench.context [SIZE] [LAYER ...]      (default: 10000, every layer there is)

- assembly p50/p95/max over the design's scenario tasks and varied others, uncached (every
  search reaches the layer) and through ``CachedStore`` (repeated tasks); the bar is p95 <= 50 ms;
  beside the wall time, the CPU time this process spent per assembly, which other work on a
  shared machine does not inflate (run an earlier tree's code with this script first on
  ``PYTHONPATH`` and ``python -P`` to compare in the same conditions);
- calibration: for each labelled task of ``tests.context_corpus``, the scores of the memories a
  person would want in its context and of those they would not, per category query.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from backends.protocol import MemoryBackend, upsert_all
from fallback import FileBackend
from memory.agent.turns import TurnState, record_turn
from memory.context import CachedStore, Phase, Task, Thresholds, build_context
from tests.context_corpus import MEMORIES, PROJECT, filler, score_populations

BAR_MS = 50.0
RUNS = 120
BATCH = 500

TASKS = [
    (Task(id="TASK-001", description="Implement ping tool for MCP server", complexity=3,
          feature_id="FEAT-SKEL-001"), Phase.IMPLEMENT),
    (Task(id="TASK-002", description="Fix authentication middleware", task_type="refinement",
          complexity=5, refinement_attempt=2, last_failure_type="circular_dependency"),
     Phase.IMPLEMENT),
    (Task(id="TASK-003", description="Review authentication implementation", task_type="review",
          complexity=4), Phase.REVIEW),
    (Task(id="TASK-004", description="Implement user auth", complexity=6,
          feature_id="FEAT-AUTH-002", is_autobuild=True, turn_number=3), Phase.IMPLEMENT),
    (Task(id="TASK-004", description="Implement user auth", complexity=6,
          feature_id="FEAT-AUTH-002", is_autobuild=True, current_actor="coach", turn_number=3),
     Phase.REVIEW),
    (Task(description="Speed up the invoice export job", complexity=7), Phase.PLAN),
    (Task(description="Add refund webhook retries with backoff", complexity=5), Phase.TEST),
    (Task(description="Document the tax service", task_type="docs", complexity=2), Phase.LOAD),
]


def _layers() -> list[tuple[str, Callable[[Path], object]]]:
    layers: list[tuple[str, Callable[[Path], object]]] = [("file", FileBackend.open)]
    try:
        from backends.graph import GraphBackend
    except ImportError as exc:
        print(f"graph layer: not measured ({exc})")
    else:
        layers.append(("graph", GraphBackend.open))
    return layers


@asynccontextmanager
async def _opened(opener: Callable[[Path], object], folder: Path) -> AsyncIterator[MemoryBackend]:
    store = await opener(folder)  # type: ignore[misc]
    try:
        yield store
    finally:
        await store.aclose()


async def _populate(store: MemoryBackend, size: int) -> float:
    started = time.perf_counter()
    episodes = [*MEMORIES.values(), *filler(size - len(MEMORIES))]
    for start in range(0, len(episodes), BATCH):
        await upsert_all(store, episodes[start : start + BATCH])
    for turn, feedback in ((1, "Initial implementation incomplete"),
                           (2, "Coverage must be at least 80%; missing tests for error paths")):
        await record_turn(store, PROJECT, TurnState(
            feature_id="FEAT-AUTH-002", task_id="TASK-004", turn=turn, coach_decision="revise",
            coach_feedback=feedback, progress_summary="login endpoint and session cookie",
        ))
    return time.perf_counter() - started


async def _latencies(store: MemoryBackend, runs: int
                     ) -> tuple[list[float], list[float], int]:
    """Wall and CPU milliseconds of each assembly, and how many went over budget."""
    times, cpu, over = [], [], 0
    for n in range(runs):
        task, phase = TASKS[n % len(TASKS)]
        started, used = time.perf_counter(), time.process_time()
        result = await build_context(store, task, phase=phase, project_id=PROJECT)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - used) * 1000)
        over += result.tokens_used > result.budget
    return times, cpu, over


def _row(label: str, times: Sequence[float]) -> str:
    p95 = statistics.quantiles(times, n=20)[-1]
    verdict = "ok" if p95 <= BAR_MS else f"OVER the {BAR_MS:.0f} ms bar"
    return (f"  {label:<28} p50 {statistics.median(times):6.1f} ms   p95 {p95:6.1f} ms   "
            f"max {max(times):6.1f} ms   {verdict}")


async def _calibration(store: MemoryBackend) -> None:
    scores = await score_populations(store)
    for population, values in scores.items():
        print(f"  scores, {population:<13} n={len(values):<4} min {min(values):.3f}  median "
              f"{statistics.median(values):.3f}  max {max(values):.3f}")
    t = Thresholds()
    print(f"  thresholds: first-of-type {t.first_of_type}, familiar {t.familiar}; relevant "
          f"below familiar: {sum(s < t.familiar for s in scores['relevant'])}, unrelated at or "
          f"above first-of-type: {sum(s >= t.first_of_type for s in scores['unrelated'])}")


async def _bench(name: str, opener: Callable[[Path], object], size: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with _opened(opener, Path(folder) / name) as store:
            seconds = await _populate(store, size)
            count = await store.count()
            print(f"{name} layer: {count} memories (written in {seconds:.0f} s)")
            await _latencies(store, len(TASKS))  # warm-up: first searches build lazy state
            cold, cold_cpu, over = await _latencies(store, RUNS)
            cache = CachedStore(store)
            warm, warm_cpu, _ = await _latencies(cache, RUNS)
            print(_row("assembly, uncached", cold))
            print(_row("  CPU time", cold_cpu))
            print(_row("assembly, through CachedStore", warm))
            print(_row("  CPU time", warm_cpu))
            print(f"  contexts over budget: {over} of {RUNS}")
            await _calibration(store)


def main() -> None:
    args = sys.argv[1:] if __name__ == "__main__" else []
    size = int(args.pop(0)) if args and args[0].isdigit() else 10_000
    print(f"context assembly, {size} memories per layer, {RUNS} runs over {len(TASKS)} tasks")
    for name, opener in _layers():
        if not args or name in args:
            asyncio.run(_bench(name, opener, size))


if __name__ == "__main__":
    main()
