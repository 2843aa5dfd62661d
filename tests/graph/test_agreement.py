"""The file and graph layers agree: the same writes and deletes leave the same episodes, counts
and search rankings in both."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from backends.graph import GraphBackend
from backends.model import Episode
from backends.protocol import MemoryBackend
from fallback import FileBackend

WORDS = ["lock", "cache", "retry", "index", "schema", "graph", "token", "build", "deploy", "test",
         "review", "merge"]
QUERIES = ["lock cache", "retyr", "schema graph deploy", "review", "merging tests"]


def operations(seed: int) -> list[Episode | str]:
    rng = random.Random(seed)
    steps: list[Episode | str] = []
    for n in range(60):
        number = rng.randrange(25)
        if rng.random() < 0.2:
            steps.append(f"ep-{number}")
            continue
        steps.append(Episode.parse(
            id=f"ep-{number}", group_id=rng.choice(["alpha", "beta"]),
            kind=rng.choice(["pattern", "gotcha"]), name=f"note {n}",
            body=" ".join(rng.choices(WORDS, k=12)) + ("" if n % 3 else ' {"files": ["a.py"]}'),
            created_at=datetime(2025, 1, 1, tzinfo=UTC) + timedelta(minutes=rng.randrange(30)),
        ))
    return steps


async def observe(store: MemoryBackend) -> dict[str, list[Any]]:
    return {
        "scan": [e async for e in store.scan()],
        "alpha patterns": [e.id async for e in store.scan(group_ids=["alpha"], kinds=["pattern"])],
        "counts": [await store.count(group_ids=[g]) for g in ("alpha", "beta")],
        "search": [[h.episode.id for h in await store.search(q, group_ids=g)]
                   for q in QUERIES for g in (None, ["beta"])],
    }


async def test_both_layers_hold_and_rank_the_same(tmp_path: Path, seed: int) -> None:
    files = await FileBackend.open(tmp_path / "files")
    graph = await GraphBackend.open(tmp_path / "graph")
    try:
        for step in operations(seed):
            for store in (files, graph):
                if isinstance(step, str):
                    await store.delete(step)
                else:
                    await store.upsert(step)
        seen = await observe(files)
        assert seen["scan"] and any(seen["search"])
        assert await observe(graph) == seen
    finally:
        await files.aclose()
        await graph.aclose()
