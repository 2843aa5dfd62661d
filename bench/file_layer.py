"""The file layer at 1k and 10k synthetic episodes, each figure beside a baseline from the same run.

    python -m bench.file_layer [SIZE ...]      (default: 1000 10000)

- write rate: ``upsert`` one episode at a time (how agents write), against the floor of any
  durable file-per-episode layout: one JSON file written atomically (temp, fsync, rename);
- cold open to first result: open the folder and answer one search, against reading and parsing
  every file, building plain BM25 and answering the same search;
- search p50/p95 over its own group, against plain BM25 held in memory;
- LoCoMo dev quality against plain BM25 (see ``bench.locomo``).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from backends.model import DEFAULT_MAX_BODY_BYTES, Episode
from bench import locomo
from bench.bm25 import BM25
from fallback import FileBackend

GROUPS = 8
KINDS = ("session_insight", "pattern", "gotcha", "codebase_discovery", "task_outcome")
BODY_CHARS = 300
QUERIES = 200
SEED = 20261122


def synthetic(count: int, seed: int = SEED) -> list[Episode]:
    """``count`` episodes of ~300 characters over a Zipf-distributed vocabulary, in ``GROUPS``
    groups, the same for the same arguments."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qui", "dor", "fen"]
    vocabulary = sorted({"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(6000)})
    rng.shuffle(vocabulary)
    zipf = list(itertools.accumulate(1 / rank for rank in range(1, len(vocabulary) + 1)))
    start = datetime(2026, 1, 1, tzinfo=UTC)
    episodes = []
    for n in range(count):
        words: list[str] = []
        length = 0
        while length < BODY_CHARS:
            words.append(rng.choices(vocabulary, cum_weights=zipf)[0])
            length += len(words[-1]) + 1
        episodes.append(Episode(
            id=f"bench-{n:06d}", group_id=f"project-{n % GROUPS}", kind=KINDS[n % len(KINDS)],
            name=" ".join(words[:5]), body=" ".join(words), source="bench",
            created_at=start + timedelta(seconds=n),
        ))
    return episodes


def queries(episodes: Sequence[Episode], seed: int = SEED) -> list[tuple[str, str]]:
    """(query, group) pairs: three words of a stored episode, searched in its group."""
    rng = random.Random(seed + 1)
    picked = rng.sample(list(episodes), min(QUERIES, len(episodes)))
    return [(" ".join(rng.sample(e.body.split(), 3)), e.group_id) for e in picked]


def common_queries(episodes: Sequence[Episode], seed: int = SEED) -> list[str]:
    """Six words of a stored episode, so mostly frequent ones (the vocabulary is Zipf): the
    queries that make an inverted index walk long postings, searched over every group."""
    rng = random.Random(seed + 2)
    picked = rng.sample(list(episodes), min(QUERIES, len(episodes)))
    return [" ".join(rng.sample(e.body.split(), 6)) for e in picked]


def _atomic_write(folder: Path, episode: Episode) -> None:
    target = folder / episode.group_id / f"{episode.id}.json"
    temp = target.with_suffix(".tmp")
    with temp.open("wb") as out:
        out.write(orjson.dumps(episode.to_json(), option=orjson.OPT_INDENT_2))
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, target)


def bm25_by_group(episodes: Sequence[Episode]) -> dict[str, BM25]:
    by_group: dict[str, list[tuple[str, str]]] = {}
    for e in episodes:
        by_group.setdefault(e.group_id, []).append((e.id, f"{e.name} {e.body}"))
    return {group: BM25(docs) for group, docs in by_group.items()}


@dataclass(frozen=True)
class Figure:
    metric: str
    unit: str
    ours: float
    baseline: float
    baseline_is: str

    def row(self) -> str:
        return (f"{self.metric:<28}{self.ours:>10.2f} {self.unit:<5}{self.baseline:>10.2f} "
                f"{self.unit:<5}{self.ours / self.baseline:>7.2f}  {self.baseline_is}")


async def _open(folder: Path) -> FileBackend:
    return await FileBackend.open(folder, max_body_bytes=DEFAULT_MAX_BODY_BYTES)


Timings = tuple[float, float, list[float], list[float]]
"""write seconds, cold open to first result seconds, own-group and all-group search latencies"""
BATCH = 500  # what ``dualmem import`` hands the store at a time


async def _batched_write(folder: Path, episodes: Sequence[Episode]) -> float:
    backend = await _open(folder)
    started = time.perf_counter()
    for start in range(0, len(episodes), BATCH):
        await backend.upsert_many(episodes[start : start + BATCH])
    seconds = time.perf_counter() - started
    await backend.aclose()
    return seconds


async def _file_layer(folder: Path, episodes: Sequence[Episode], asked: Sequence[tuple[str, str]],
                      common: Sequence[str]) -> Timings:
    backend = await _open(folder)
    started = time.perf_counter()
    for episode in episodes:
        await backend.upsert(episode)
    write = time.perf_counter() - started
    await backend.aclose()

    started = time.perf_counter()
    backend = await _open(folder)
    first = await backend.search(asked[0][0], group_ids=[asked[0][1]])
    cold = time.perf_counter() - started
    assert first, "the first search found nothing"
    latencies = []
    for query, group in asked:
        started = time.perf_counter()
        await backend.search(query, group_ids=[group], limit=10)
        latencies.append(time.perf_counter() - started)
    wide = []
    for query in common:
        started = time.perf_counter()
        await backend.search(query, limit=10)
        wide.append(time.perf_counter() - started)
    await backend.aclose()
    return write, cold, latencies, wide


def _baseline(folder: Path, episodes: Sequence[Episode], asked: Sequence[tuple[str, str]],
              common: Sequence[str]) -> Timings:
    for group in {e.group_id for e in episodes}:
        (folder / group).mkdir(parents=True)
    started = time.perf_counter()
    for episode in episodes:
        _atomic_write(folder, episode)
    write = time.perf_counter() - started

    started = time.perf_counter()
    loaded = [Episode(**orjson.loads(path.read_bytes())) for path in folder.glob("*/*.json")]
    indexes = bm25_by_group(loaded)
    indexes[asked[0][1]].search(asked[0][0])
    cold = time.perf_counter() - started
    latencies = []
    for query, group in asked:
        started = time.perf_counter()
        indexes[group].search(query)
        latencies.append(time.perf_counter() - started)
    everything = BM25((e.id, f"{e.name} {e.body}") for e in loaded)
    wide = []
    for query in common:
        started = time.perf_counter()
        everything.search(query)
        wide.append(time.perf_counter() - started)
    return write, cold, latencies, wide


async def bench_size(count: int) -> list[Figure]:
    episodes = synthetic(count)
    asked, common = queries(episodes), common_queries(episodes)
    with tempfile.TemporaryDirectory(prefix="dualmem-bench-") as scratch:
        ours = await _file_layer(Path(scratch) / "files", episodes, asked, common)
        batched = await _batched_write(Path(scratch) / "batched", episodes)
        base = _baseline(Path(scratch) / "baseline", episodes, asked, common)
    (write, cold, search, wide), (b_write, b_cold, b_search, b_wide) = ours, base
    p50, p95 = locomo.percentiles(search)
    b_p50, b_p95 = locomo.percentiles(b_search)
    w_p50, w_p95 = locomo.percentiles(wide)
    bw_p50, bw_p95 = locomo.percentiles(b_wide)
    return [
        Figure("write, one upsert each", "ep/s", count / write, count / b_write,
               "one JSON file per episode: temp, fsync, rename"),
        Figure(f"write, upsert_many({BATCH})", "ep/s", count / batched, count / b_write,
               "the same"),
        Figure("cold open to first result", "ms", 1000 * cold, 1000 * b_cold,
               "read + parse every file, build BM25, one search"),
        Figure("search p50 (own group)", "ms", p50, b_p50, "plain BM25 in memory"),
        Figure("search p95 (own group)", "ms", p95, b_p95, "plain BM25 in memory"),
        Figure("common words p50 (all)", "ms", w_p50, bw_p50, "plain BM25 in memory, all groups"),
        Figure("common words p95 (all)", "ms", w_p95, bw_p95, "plain BM25 in memory, all groups"),
    ]


async def locomo_quality() -> str:
    data = locomo.load()
    with tempfile.TemporaryDirectory(prefix="dualmem-bench-") as scratch:
        backend = await _open(Path(scratch) / "files")
        try:
            ours = await locomo.measure(backend, data)
        finally:
            await backend.aclose()
    return locomo.table({locomo.BASELINE: locomo.bm25_quality(data), "file layer": ours}, data)


async def report(
    layer: str,
    sizes: Sequence[int],
    bench_size: Callable[[int], Awaitable[list[Figure]]],
    quality: Callable[[], Awaitable[str]],
) -> None:
    """Print a layer's figures at each size, then its LoCoMo table (shared by the layer benches)."""
    print(f"{layer} bench, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cpu(s)")
    for count in sizes:
        print(f"\n{count:,} episodes in {GROUPS} groups, ~{BODY_CHARS} chars each")
        print(f"{'metric':<28}{layer:>16}{'baseline':>16}{'ratio':>7}  baseline is")
        for figure in await bench_size(count):
            print(figure.row(), flush=True)
    print()
    print(await quality())


def main(sizes: Sequence[int] = (1000, 10000)) -> None:
    asyncio.run(report("file layer", sizes, bench_size, locomo_quality))


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or (1000, 10000))
