"""Opening and searching a stored home, beside SQLite FTS5 and tantivy on the same documents and
queries, in the same run (issue: open in milliseconds, scale to 100k).

    python -m bench.open_search [SIZE ...]      (default: 1000 10000 100000)

Per size, with the synthetic episodes of ``bench.file_layer`` (8 groups, ~300 characters):

- cold open to first result, in a fresh process with imports done (median of 5): the file layer
  opening its home and answering one search; the graph layer likewise; FTS5 opening its
  database and answering one OR-query; tantivy opening its index and answering one query;
- search p50/p95 over the query's own group (3 words), and over all groups with 6 common words;
- peak resident memory of a process that opens the store and answers the 200 queries;
- a single upsert into the file layer, a ``gotcha`` (shown in a view) and a ``task_outcome``
  (median of 20);
- ``dualmem --backend file search`` as a whole process (p50/p95 of 15), beside ``python -c pass``;
- the file layer's LoCoMo dev R@10 / MRR (once per run).

The stores are built once per size under ``$DUALMEM_BENCH_CACHE`` (default: the system's temp
folder, ``dualmem-open-search/SIZE``) and reused by later runs: a 100k graph takes a while.

tantivy is a benchmark dependency only (the ``dev`` extra); dualmem does not use it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import orjson

from backends.graph import GraphBackend
from backends.model import Episode
from bench import locomo
from bench.file_layer import common_queries, queries, synthetic
from bench.locomo import percentiles
from bench.migrate import lay_down
from fallback import FileBackend
from migrate import Ledger, Migrator

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
elif kind == "graph":
    from backends.graph import GraphBackend
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
elif kind == "graph":
    loop = asyncio.new_event_loop()
    store = loop.run_until_complete(GraphBackend.open(where))
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


async def single_upserts(where: Path, kind: str, count: int = 20) -> float:
    store = await FileBackend.open(where, watch=False)
    try:
        took = []
        for n in range(count):
            episode = Episode.create(group_id="project-0", kind=kind, key=f"single-{n}",
                                     name=f"single {kind} {n}", body=f"one more {kind} {n}")
            started = time.perf_counter()
            await store.upsert(episode)
            took.append(time.perf_counter() - started)
        return 1000 * statistics.median(took)
    finally:
        await store.aclose()


def whole_process(home: Path, query: str, runs: int = 15) -> tuple[tuple[float, float], ...]:
    commands = [[sys.executable, "-m", "memory", "--home", str(home.parent), "--backend",
                 "file", "search", query], [sys.executable, "-c", "pass"]]
    # Bytecode as an installed dualmem has it (the first, untimed run writes it).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(commands[0], capture_output=True, check=True, env=env)
    figures = []
    for command in commands:
        took = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run(command, capture_output=True, check=True, env=env)
            took.append(time.perf_counter() - started)
        figures.append(percentiles(took))
    return tuple(figures)


def build(size: int, root: Path) -> None:
    """The stores of ``size`` episodes under ``root``, unless an earlier run left them there."""
    done = root / "built"
    if done.exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    episodes = synthetic(size)
    home = root / "home"
    lay_down(home / "files", episodes)

    async def fill() -> None:
        files = await FileBackend.open(home / "files", watch=False)
        graph = await GraphBackend.open(home / "graph")
        ledger = Ledger.open(home / "migration" / "ledger.sqlite3")
        try:
            await Migrator(files, graph, ledger).run()
        finally:
            ledger.close()
            await graph.aclose()
            await files.aclose()

    asyncio.run(fill())
    build_fts5(root / "fts5.sqlite3", episodes)
    build_tantivy(root / "tantivy", episodes)
    done.touch()


def locomo_file_layer() -> str:
    data = locomo.load()

    async def run() -> locomo.Quality:
        with tempfile.TemporaryDirectory() as tmp:
            store = await FileBackend.open(Path(tmp) / "files", watch=False)
            try:
                return await locomo.measure(store, data)
            finally:
                await store.aclose()

    quality = asyncio.run(run())
    overall = quality.overall
    return f"LoCoMo dev, file layer: R@10 {overall.r10:.3f}, MRR {overall.mrr:.3f}"


KINDS = ("file", "graph", "fts5", "tantivy")


def measure(size: int, root: Path) -> None:
    started = time.perf_counter()
    build(size, root)
    built = time.perf_counter() - started
    episodes = synthetic(size)
    own = queries(episodes)
    questions: dict[str, object] = {"own": own, "common": common_queries(episodes)}
    home = root / "home"
    found = {kind: probe(kind, where, questions) for kind, where in
             (("file", home / "files"), ("graph", home / "graph"),
              ("fts5", root / "fts5.sqlite3"), ("tantivy", root / "tantivy"))}
    upserts = {kind: asyncio.run(single_upserts(home / "files", kind))
               for kind in ("gotcha", "task_outcome")}
    search_process, python_pass = whole_process(home / "files", own[0][0])
    print(f"\n{size:,} episodes (stores built or found in {built:.1f} s)")
    print(f"{'figure':<40}" + "".join(f"{name:>14}" for name in
                                      ("file layer", "graph layer", "SQLite FTS5", "tantivy")))

    def row(label: str, pick: str) -> None:
        cells = []
        for kind in KINDS:
            value = found[kind][pick]
            cells.append(f"{1000 * value:.1f} ms" if isinstance(value, float) else value)
        print(f"{label:<40}" + "".join(f"{cell:>14}" for cell in cells))

    row("cold open to first result (median)", "first")
    for label, key in (("search p50 / p95, own group", "own"),
                       ("search p50 / p95, all groups, common", "common")):
        cells = []
        for kind in KINDS:
            p50, p95 = percentiles(found[kind][key])  # type: ignore[arg-type]
            cells.append(f"{p50:.2f}/{p95:.2f}")
        print(f"{label + ' (ms)':<40}" + "".join(f"{cell:>14}" for cell in cells))
    peaks = [f"{found[kind]['peak_mb']:.0f} MB" for kind in KINDS]
    print(f"{'peak memory of a search process':<40}" + "".join(f"{p:>14}" for p in peaks))
    for kind, took in upserts.items():
        print(f"{'single ' + kind + ' upsert (median)':<40}{took:>11.1f} ms")
    print(f"{'dualmem search, whole process p50/p95':<40}"
          f"{search_process[0]:>8.0f}/{search_process[1]:.0f} ms   "
          f"(python -c pass: {python_pass[0]:.0f}/{python_pass[1]:.0f} ms)")


def main(sizes: Sequence[int] = (1000, 10000, 100000)) -> None:
    cache = Path(os.environ.get("DUALMEM_BENCH_CACHE",
                                Path(tempfile.gettempdir()) / "dualmem-open-search"))
    print(f"open and search, {os.cpu_count()} cpu(s); stores cached in {cache}")
    print(locomo_file_layer())
    for size in sizes:
        measure(size, cache / str(size))


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or (1000, 10000, 100000))
