"""Opening and searching a stored home, beside SQLite FTS5 and tantivy on the same documents and
queries, in the same run (issue: open in milliseconds, scale to 100k).

    python -m bench.open_search [SIZE ...]      (default: 1000 10000 100000)

Per size, with the synthetic episodes of ``bench.file_layer`` (8 groups, ~300 characters):

- cold open to first result, in a fresh process with imports done (median of 5): the file layer
  opening its home and answering one search; FTS5 opening its database and answering one
  OR-query; tantivy opening its index and answering one query;
- search p50/p95 over the query's own group (3 words), and over all groups with 6 common words;
- peak resident memory of a process that opens the store and answers the 200 queries;
- a single ``gotcha`` upsert into the file layer (median of 20);
- ``dualmem --backend file search`` as a whole process (p50/p95 of 15), beside ``python -c pass``.

tantivy is a benchmark dependency only (the ``dev`` extra); dualmem does not use it.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import orjson

from backends.model import Episode
from backends.protocol import upsert_all
from bench.file_layer import common_queries, queries, synthetic
from bench.locomo import percentiles
from fallback import FileBackend

_PROBE = r"""
import asyncio, json, sys, time
kind, where = sys.argv[1], sys.argv[2]
questions = json.loads(sys.stdin.read())
def peak_mb():  # VmHWM: ru_maxrss would carry the parent's peak across exec
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
# Imports before the clock: the whole-process figure counts them.
if kind == "file":
    from fallback import FileBackend
elif kind == "fts5":
    import re, sqlite3
else:
    import tantivy
started = time.perf_counter()
if kind == "file":
    # One loop for the whole run: run_until_complete adds some 20 us to each search.
    loop = asyncio.new_event_loop()
    store = loop.run_until_complete(FileBackend.open(where, watch=False))
    def ask(text, group=None):
        groups = None if group is None else [group]
        return loop.run_until_complete(store.search(text, group_ids=groups))
elif kind == "fts5":
    def match(text):
        return " OR ".join('"%s"' % w for w in re.findall(r"\w+", text))
    db = sqlite3.connect(where)
    def ask(text, group=None):
        where = "docs MATCH ?" + ("" if group is None else " AND grp = ?")
        params = (match(text),) + (() if group is None else (group,))
        sql = f"SELECT id FROM docs WHERE {where} ORDER BY rank LIMIT 10"
        return db.execute(sql, params).fetchall()
else:
    index = tantivy.Index.open(where)
    searcher = index.searcher()
    def ask(text, group=None):
        query = index.parse_query(text, ["text"])
        if group is not None:
            query = tantivy.Query.boolean_query([
                (tantivy.Occur.Must, query),
                (tantivy.Occur.Must, tantivy.Query.term_query(index.schema, "grp", group))])
        return searcher.search(query, 10).hits
ask(*questions["own"][0])
first = time.perf_counter() - started
own, common = [], []
for text, group in questions["own"]:
    t = time.perf_counter()
    ask(text, group)
    own.append(time.perf_counter() - t)
for text in questions["common"]:
    t = time.perf_counter()
    ask(text)
    common.append(time.perf_counter() - t)
print(json.dumps({"first": first, "own": own, "common": common, "peak_mb": peak_mb()}))
"""


def build_fts5(path: Path, episodes: Sequence[Episode]) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, grp UNINDEXED, text)")
    db.executemany("INSERT INTO docs VALUES (?, ?, ?)",
                   ((e.id, e.group_id, f"{e.name}\n{e.body}") for e in episodes))
    db.commit()
    db.close()


def build_tantivy(path: Path, episodes: Sequence[Episode]) -> None:
    import tantivy

    schema = (tantivy.SchemaBuilder().add_text_field("id", stored=True)
              .add_text_field("grp", tokenizer_name="raw").add_text_field("text").build())
    path.mkdir()
    index = tantivy.Index(schema, path=str(path))
    writer = index.writer()
    for e in episodes:
        writer.add_document(tantivy.Document(id=e.id, grp=e.group_id, text=f"{e.name}\n{e.body}"))
    writer.commit()
    writer.wait_merging_threads()


def probe(kind: str, where: Path, questions: dict[str, object]) -> dict[str, object]:
    """One fresh process per kind: imports done before the clock starts."""
    runs = [subprocess.run([sys.executable, "-c", _PROBE, kind, str(where)],
                           input=orjson.dumps(questions), capture_output=True, check=True)
            for _ in range(5)]
    results = [orjson.loads(run.stdout) for run in runs]
    best = results[0]
    best["first"] = statistics.median(r["first"] for r in results)
    return dict(best)


async def single_upserts(where: Path, count: int = 20) -> float:
    store = await FileBackend.open(where, watch=False)
    try:
        took = []
        for n in range(count):
            episode = Episode.create(group_id="project-0", kind="gotcha", key=f"single-{n}",
                                     name=f"single gotcha {n}", body=f"one more gotcha {n}")
            started = time.perf_counter()
            await store.upsert(episode)
            took.append(time.perf_counter() - started)
        return 1000 * statistics.median(took)
    finally:
        await store.aclose()


def whole_process(home: Path, query: str, runs: int = 15) -> tuple[tuple[float, float], ...]:
    commands = [[sys.executable, "-m", "memory", "--home", str(home.parent), "--backend",
                 "file", "search", query], [sys.executable, "-c", "pass"]]
    figures = []
    for command in commands:
        took = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run(command, capture_output=True, check=True)
            took.append(time.perf_counter() - started)
        figures.append(percentiles(took))
    return tuple(figures)


def measure(size: int, root: Path) -> None:
    episodes = synthetic(size)
    questions = {"own": queries(episodes), "common": common_queries(episodes)}
    files = root / "home" / "files"

    async def fill() -> None:
        store = await FileBackend.open(files, watch=False)
        try:
            for start in range(0, len(episodes), 1000):
                await upsert_all(store, episodes[start : start + 1000])
        finally:
            await store.aclose()

    started = time.perf_counter()
    asyncio.run(fill())
    ingest = time.perf_counter() - started
    build_fts5(root / "fts5.sqlite3", episodes)
    build_tantivy(root / "tantivy", episodes)
    found = {kind: probe(kind, where, questions) for kind, where in
             (("file", files), ("fts5", root / "fts5.sqlite3"), ("tantivy", root / "tantivy"))}
    upsert_ms = asyncio.run(single_upserts(files))
    search_process, python_pass = whole_process(files, questions["own"][0][0])
    print(f"\n{size:,} episodes (file layer ingest {ingest:.1f} s in batches of 1000)")
    print(f"{'figure':<40}{'dualmem':>14}{'SQLite FTS5':>14}{'tantivy':>14}")

    def row(label: str, pick: str) -> None:
        cells = []
        for kind in ("file", "fts5", "tantivy"):
            value = found[kind][pick]
            cells.append(f"{1000 * value:.1f} ms" if isinstance(value, float) else value)
        print(f"{label:<40}{cells[0]:>14}{cells[1]:>14}{cells[2]:>14}")

    row("cold open to first result (median)", "first")
    for label, key in (("search p50 / p95, own group", "own"),
                       ("search p50 / p95, all groups, common", "common")):
        cells = []
        for kind in ("file", "fts5", "tantivy"):
            p50, p95 = percentiles(found[kind][key])  # type: ignore[arg-type]
            cells.append(f"{p50:.2f}/{p95:.2f}")
        print(f"{label + ' (ms)':<40}{cells[0]:>14}{cells[1]:>14}{cells[2]:>14}")
    peaks = [f"{found[kind]['peak_mb']:.0f} MB" for kind in ("file", "fts5", "tantivy")]
    print(f"{'peak memory of a search process':<40}{peaks[0]:>14}{peaks[1]:>14}{peaks[2]:>14}")
    print(f"{'single gotcha upsert (median)':<40}{upsert_ms:>11.1f} ms")
    print(f"{'dualmem search, whole process p50/p95':<40}"
          f"{search_process[0]:>8.0f}/{search_process[1]:.0f} ms   "
          f"(python -c pass: {python_pass[0]:.0f}/{python_pass[1]:.0f} ms)")


def main(sizes: Sequence[int] = (1000, 10000, 100000)) -> None:
    print(f"open and search, {os.cpu_count()} cpu(s); dualmem = the file layer's persistent index")
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            measure(size, Path(tmp))


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or (1000, 10000, 100000))
