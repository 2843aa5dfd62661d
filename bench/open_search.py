"""Opening and searching a stored home, beside SQLite FTS5 and tantivy on the same documents and
queries, in the same run (issue: open in milliseconds, scale to 100k).

    python -m bench.open_search [SIZE ...]      (default: 1000 10000 100000)

Per size, with the synthetic episodes of ``bench.file_layer`` (8 groups, ~300 characters):

- cold open to first result, in a fresh process with imports done (median of 5): the file layer
  opening its home and answering one search; the graph layer likewise; FTS5 opening its
  database and answering one OR-query; tantivy opening its index and answering one query;
- search p50/p95 over the query's own group (3 words), and over all groups with 6 common words;
- peak resident memory of a process that opens the store and answers the 200 queries;
- a single upsert into the file layer of each kind (median of 20), into a copy of the home;
- ``dualmem --backend file search`` and ``--backend graph`` as whole processes (p50/p95 of 15),
  beside ``python -c pass``;
- the file layer's LoCoMo dev R@10 / MRR (once per run).

The machine may be shared: every timing is given as wall and as CPU time of the process (CPU is
the figure to read when the load average, printed per size, is above the core count).

The stores are built once per size under ``$DUALMEM_BENCH_CACHE`` (default: the system's temp
folder, ``dualmem-open-search/SIZE``) and reused by later runs: a 100k graph takes a while.

tantivy is a benchmark dependency only (the ``dev`` extra); dualmem does not use it.
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import orjson

from backends.graph import GraphBackend
from backends.model import Episode
from bench import locomo
from bench.file_layer import KINDS as EPISODE_KINDS
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
started, started_cpu = time.perf_counter(), time.process_time()
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
first, first_cpu = time.perf_counter() - started, time.process_time() - started_cpu
took = {"own": [], "common": [], "own_cpu": [], "common_cpu": []}
for key, asked in (("own", questions["own"]), ("common", [[q] for q in questions["common"]])):
    for args in asked:
        t, c = time.perf_counter(), time.process_time()
        ask(*args)
        took[key].append(time.perf_counter() - t)
        took[key + "_cpu"].append(time.process_time() - c)
print(json.dumps({"first": first, "first_cpu": first_cpu, **took, "peak_mb": peak_mb()}))
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
    for key in ("first", "first_cpu"):
        best[key] = statistics.median(r[key] for r in results)
    return dict(best)


async def single_upserts(where: Path, kind: str, count: int = 20) -> tuple[float, float]:
    """Median wall and CPU ms of one upsert of ``kind`` into the file layer at ``where``."""
    store = await FileBackend.open(where, watch=False)
    try:
        took, cpu = [], []
        for n in range(count):
            episode = Episode.create(group_id="project-0", kind=kind, key=f"single-{n}",
                                     name=f"single {kind} {n}", body=f"one more {kind} {n}")
            started, started_cpu = time.perf_counter(), time.process_time()
            await store.upsert(episode)
            took.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
        return 1000 * statistics.median(took), 1000 * statistics.median(cpu)
    finally:
        await store.aclose()


def upserts_on_a_copy(files: Path) -> dict[str, tuple[float, float]]:
    """``single_upserts`` of every kind, into a copy: the cached home stays as built."""
    with tempfile.TemporaryDirectory(prefix="dualmem-open-search-") as tmp:
        copy = Path(tmp) / "files"
        shutil.copytree(files, copy, symlinks=True)
        return {kind: asyncio.run(single_upserts(copy, kind)) for kind in EPISODE_KINDS}


def whole_process(home: Path, query: str, runs: int = 15) -> dict[str, Timings]:
    """Wall and CPU p50/p95 of ``dualmem search`` on each layer and of ``python -c pass``."""
    commands = {layer: [sys.executable, "-m", "memory", "--home", str(home), "--backend",
                        layer, "search", query] for layer in ("file", "graph")}
    commands["python -c pass"] = [sys.executable, "-c", "pass"]
    # Bytecode as an installed dualmem has it (the first, untimed run writes it).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    figures = {}
    for name, command in commands.items():
        subprocess.run(command, capture_output=True, check=True, env=env)
        took, cpu = [], []
        for _ in range(runs):
            started, children = time.perf_counter(), _children_cpu()
            subprocess.run(command, capture_output=True, check=True, env=env)
            took.append(time.perf_counter() - started)
            cpu.append(_children_cpu() - children)
        figures[name] = Timings(percentiles(took), percentiles(cpu))
    return figures


class Timings(NamedTuple):
    wall: tuple[float, float]  # p50, p95 in ms
    cpu: tuple[float, float]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


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
    load_before = os.getloadavg()
    episodes = synthetic(size)
    own = queries(episodes)
    questions: dict[str, object] = {"own": own, "common": common_queries(episodes)}
    home = root / "home"
    found = {kind: probe(kind, where, questions) for kind, where in
             (("file", home / "files"), ("graph", home / "graph"),
              ("fts5", root / "fts5.sqlite3"), ("tantivy", root / "tantivy"))}
    upserts = upserts_on_a_copy(home / "files")
    processes = whole_process(home, own[0][0])
    load = ", ".join(f"{a:.1f}-{b:.1f}" for a, b in zip(load_before, os.getloadavg(),
                                                          strict=True))
    print(f"\n{size:,} episodes (stores built or found in {built:.1f} s;"
          f" load average 1/5/15 min, before-after: {load})")
    print(f"{'figure (ms, wall / CPU)':<50}" + "".join(
        f"{name:>16}" for name in ("file layer", "graph layer", "SQLite FTS5", "tantivy")))
    cells = [f"{1000 * found[k]['first']:.1f}/{1000 * found[k]['first_cpu']:.1f}"  # type: ignore[operator]
             for k in KINDS]
    print(f"{'cold open to first result (median of 5)':<50}" + "".join(f"{c:>16}" for c in cells))
    for label, key in (("search p50, own group", "own"), ("search p95, own group", "own"),
                       ("search p50, all groups, 6 common words", "common"),
                       ("search p95, all groups, 6 common words", "common")):
        at = 0 if "p50" in label else 1
        cells = [f"{percentiles(found[k][key])[at]:.2f}/"  # type: ignore[arg-type]
                 f"{percentiles(found[k][key + '_cpu'])[at]:.2f}" for k in KINDS]  # type: ignore[arg-type]
        print(f"{label:<50}" + "".join(f"{c:>16}" for c in cells))
    peaks = [f"{found[kind]['peak_mb']:.0f} MB" for kind in KINDS]
    print(f"{'peak memory of a search process':<50}" + "".join(f"{p:>16}" for p in peaks))
    for kind, (wall, cpu) in upserts.items():
        print(f"{'single ' + kind + ' upsert, file (median)':<50}{wall:>13.1f}/{cpu:.1f}")
    for name, timings in processes.items():
        label = name if name.startswith("python") else f"dualmem --backend {name} search"
        print(f"{label + ', whole process':<50}"
              f"wall p50/p95 {timings.wall[0]:.0f}/{timings.wall[1]:.0f},"
              f" CPU p50/p95 {timings.cpu[0]:.0f}/{timings.cpu[1]:.0f}")


def main(sizes: Sequence[int] = (1000, 10000, 100000)) -> None:
    cache = Path(os.environ.get("DUALMEM_BENCH_CACHE",
                                Path(tempfile.gettempdir()) / "dualmem-open-search"))
    print(f"open and search, {os.cpu_count()} cpu(s); stores cached in {cache}")
    print(locomo_file_layer())
    for size in sizes:
        measure(size, cache / str(size))


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or (1000, 10000, 100000))
