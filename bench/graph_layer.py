"""The graph layer at 1k and 10k synthetic episodes, each figure beside a baseline from the same
run.

    python -m bench.graph_layer [SIZE ...]      (default: 1000 10000)

- ingest: ``upsert_many`` of every episode (one transaction: rows, vectors, entities, index)
  against raw Kùzu: prepared ``CREATE`` of graphiti's bare Episodic row in one transaction, and
  (for scale) the same row with our extra columns and a precomputed vector;
- one upsert at a time (how agents write: one transaction, fsync'd, per episode);
- open (Kùzu open, index rebuilt from the rows) and close, database size on disk;
- search p50/p95 over its own group, against plain BM25 held in memory;
- LoCoMo dev quality next to the file layer and plain BM25 (see ``bench.locomo``).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from backends.graph import GraphBackend, HashingEmbedder
from backends.graph.kuzu.database import DB_FILE
from backends.graph.stored import encode
from backends.model import Episode
from backends.search.ranking import search_text
from bench import locomo
from bench.file_layer import BODY_CHARS, Figure, bm25_by_group, queries, report, synthetic
from fallback import FileBackend

ONE_BY_ONE = 200

_BARE_ROW = (
    "CREATE (:Episodic {uuid: $uuid, name: $name, group_id: $group_id, created_at: $created_at,"
    " source: 'text', source_description: $source, content: $content, valid_at: $created_at,"
    " entity_edges: []"
)
_FULL_ROW = _BARE_ROW + (
    ", kind: $kind, invalid_at: NULL, valid_at_set: false, embedding_f16: $vector"
)


def _raw_ingest(folder: Path, episodes: Sequence[Episode], *, full: bool) -> float:
    """Seconds for raw Kùzu to create the rows (graphiti's schema, one transaction)."""
    import kuzu

    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # graphiti's modules warn at import; not ours
        from graphiti_core.driver.kuzu_driver import SCHEMA_QUERIES

    folder.mkdir(parents=True)
    database = kuzu.Database(str(folder / DB_FILE))
    connection = kuzu.Connection(database)
    connection.execute(SCHEMA_QUERIES)
    connection.execute("ALTER TABLE Episodic ADD kind STRING")
    connection.execute("ALTER TABLE Episodic ADD invalid_at TIMESTAMP")
    connection.execute("ALTER TABLE Episodic ADD valid_at_set BOOLEAN")
    connection.execute("ALTER TABLE Episodic ADD embedding_f16 STRING")
    vectors = [encode(v) for v in HashingEmbedder().embed([search_text(e) for e in episodes])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # prepare() is deprecated, and fast
        statement = connection.prepare((_FULL_ROW if full else _BARE_ROW) + "})")
    started = time.perf_counter()
    connection.execute("BEGIN TRANSACTION")
    for episode, vector in zip(episodes, vectors, strict=True):
        params: dict[str, Any] = {
            "uuid": episode.id, "name": episode.name, "group_id": episode.group_id,
            "created_at": episode.created_at.replace(tzinfo=None), "source": episode.source,
            "content": episode.body,
        }
        if full:
            params.update(kind=episode.kind, vector=vector)
        connection.execute(statement, params)
    connection.execute("COMMIT")
    seconds = time.perf_counter() - started
    connection.close()
    database.close()
    return seconds


def _size_mb(folder: Path) -> float:
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file()) / 1e6


async def bench_size(count: int) -> list[Figure]:
    episodes = synthetic(count)
    asked = queries(episodes)
    with tempfile.TemporaryDirectory(prefix="dualmem-bench-") as scratch_dir:
        scratch = Path(scratch_dir)
        raw_bare = _raw_ingest(scratch / "raw-bare", episodes, full=False)
        raw_full = _raw_ingest(scratch / "raw-full", episodes, full=True)

        folder = scratch / "graph"
        graph = await GraphBackend.open(folder)  # creates the schema (imports graphiti)
        started = time.perf_counter()
        await graph.upsert_many(episodes)
        ingest = time.perf_counter() - started
        started = time.perf_counter()
        for episode in episodes[:ONE_BY_ONE]:
            await graph.upsert(episode)
        one_by_one = time.perf_counter() - started
        started = time.perf_counter()
        await graph.aclose()
        first_close = time.perf_counter() - started

        started = time.perf_counter()
        graph = await GraphBackend.open(folder)
        opened = time.perf_counter() - started
        latencies = []
        for query, group in asked:
            started = time.perf_counter()
            await graph.search(query, group_ids=[group], limit=10)
            latencies.append(time.perf_counter() - started)
        started = time.perf_counter()
        await graph.aclose()
        closed = time.perf_counter() - started
        size = _size_mb(folder)

    indexes = bm25_by_group(episodes)
    base = []
    for query, group in asked:
        started = time.perf_counter()
        indexes[group].search(query)
        base.append(time.perf_counter() - started)
    (p50, p95), (b_p50, b_p95) = locomo.percentiles(latencies), locomo.percentiles(base)
    return [
        Figure("ingest, upsert_many", "ep/s", count / ingest, count / raw_bare,
               "raw Kùzu prepared CREATE, graphiti's bare row, 1 tx"),
        Figure("ingest, upsert_many", "ep/s", count / ingest, count / raw_full,
               "same, with our columns + precomputed vector"),
        Figure("upsert one at a time", "ep/s", ONE_BY_ONE / one_by_one, count / raw_bare,
               f"(first {ONE_BY_ONE}, each its own fsync'd tx) vs raw"),
        Figure("open (index rebuilt)", "ms", 1000 * opened, 1000 * opened, "-"),
        Figure("close", "ms", 1000 * closed, 1000 * first_close, "close after the ingest"),
        Figure("database size", "MB", size, count * BODY_CHARS / 1e6, "raw text of the bodies"),
        Figure("search p50 (own group)", "ms", p50, b_p50, "plain BM25 in memory"),
        Figure("search p95 (own group)", "ms", p95, b_p95, "plain BM25 in memory"),
    ]


async def _graph_quality(data: locomo.LoCoMo, folder: Path) -> locomo.Quality:
    graph = await GraphBackend.open(folder)
    try:
        return await locomo.measure(graph, data)
    finally:
        await graph.aclose()


async def locomo_quality() -> str:
    data = locomo.load()
    with tempfile.TemporaryDirectory(prefix="dualmem-bench-") as scratch:
        graph = await _graph_quality(data, Path(scratch) / "graph")
        files = await FileBackend.open(Path(scratch) / "files")
        try:
            file_layer = await locomo.measure(files, data)
        finally:
            await files.aclose()
    results = {locomo.BASELINE: locomo.bm25_quality(data), "file layer": file_layer,
               "graph layer": graph}
    return locomo.table(results, data)


def main(sizes: Sequence[int] = (1000, 10000)) -> None:
    asyncio.run(report("graph layer", sizes, bench_size, locomo_quality))


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or (1000, 10000))
