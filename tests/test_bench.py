"""The bench harness measures what it claims: metrics, the BM25 baseline, the synthetic corpus."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from pathlib import Path

import pytest

from bench import cli_latency, file_layer, history_writes, locomo
from bench.bm25 import BM25
from memory import SyncMemory

REPO = Path(__file__).resolve().parents[1]
OURS = {"backends", "bench", "fallback", "memory", "migrate", "seeds", "tests", "falkor_server"}


def test_metrics_by_hand() -> None:
    questions = [
        locomo.Question("q1", "?", "g", frozenset({"a", "b"}), "single-hop"),
        locomo.Question("q2", "?", "g", frozenset({"z"}), "temporal"),
    ]
    # q1: "a" at rank 2, "b" at rank 7; q2: nothing found.
    rankings = {"q1": ["x", "a", "x2", "x3", "x4", "x5", "b"], "q2": ["x"]}
    quality = locomo.score(questions, rankings, [0.001, 0.003])
    assert quality.overall == locomo.Metrics(questions=2, r5=0.25, r10=0.5, hit10=0.5, mrr=0.25)
    assert quality.categories["single-hop"] == locomo.Metrics(1, 0.5, 1.0, 1.0, 0.5)
    assert quality.categories["temporal"] == locomo.Metrics(1, 0.0, 0.0, 0.0, 0.0)
    assert quality.p50_ms == pytest.approx(2.0) and quality.p95_ms == pytest.approx(3.0)


def test_bm25_prefers_rare_terms_and_short_documents() -> None:
    index = BM25([("cat", "the cat sat"), ("dog", "the dog sat"), ("dog2", "a dog ran"),
                  ("dog3", "dog days"), ("long", "Cat " + "filler " * 50), ("none", "nothing")])
    ranked = [key for key, _ in index.search("CAT, dog!")]
    assert ranked[0] == "cat" and ranked.index("cat") < ranked.index("long")
    assert "none" not in ranked
    assert index.search("absent") == []


def test_dataset_folder_is_beside_the_repository_unless_overridden(tmp_path: Path) -> None:
    assert locomo.dataset_folder({}).parts[-3:] == ("shared", "bench", "locomo-dev")
    assert locomo.dataset_folder({locomo.ENV: str(tmp_path)}) == tmp_path


def test_synthetic_corpus_is_deterministic_and_spread_over_groups() -> None:
    episodes = file_layer.synthetic(200)
    assert episodes == file_layer.synthetic(200)
    assert len({e.group_id for e in episodes}) == file_layer.GROUPS
    assert all(290 <= len(e.body) <= 320 for e in episodes)
    for query, group in file_layer.queries(episodes):
        assert len(query.split()) == 3 and group in {e.group_id for e in episodes}


def test_the_cli_latency_home_is_a_project_with_half_the_episodes(tmp_path: Path) -> None:
    home, asked = cli_latency.project_home(tmp_path, 10)
    with SyncMemory.open(home, "file") as memory:
        assert memory.count() == 10 and memory.count(group_ids=[memory.project_id]) == 5
        for query in asked:
            assert len(query.split()) == 3
            assert memory.search(query, group_ids=[memory.project_id], limit=1)


def test_the_history_bench_times_rewrites_on_a_history_it_made() -> None:
    retired, spent = history_writes.measure(history_writes.ROOT, 5)
    assert retired == 2 * 5  # each gotcha's rewrite retired the two facts it no longer states
    assert len(spent) == history_writes.ROUNDS and min(spent) > 0


def test_every_name_a_bench_imports_exists() -> None:
    # Read from the source, imports inside functions included: a bench runs rarely, so a name
    # gone from what it imports (bench.server's ``missing``) would otherwise wait for its run.
    sys.path.insert(0, str(REPO / "tests"))
    try:
        absent = [f"{path.name}:{node.lineno} {node.module}.{alias.name}"
                  for path in sorted((REPO / "bench").glob("*.py"))
                  for node in ast.walk(ast.parse(path.read_text()))
                  if isinstance(node, ast.ImportFrom) and node.module and not node.level
                  and node.module.split(".")[0] in OURS
                  for alias in node.names if not _importable(node.module, alias.name)]
    finally:
        sys.path.remove(str(REPO / "tests"))
    assert absent == []


def _importable(module: str, name: str) -> bool:
    found = importlib.import_module(module)
    return hasattr(found, name) or importlib.util.find_spec(f"{module}.{name}") is not None
