"""The graph index keeps recently read episodes decoded, and the places (group, kind) and group
sizes entity links ask for: whatever the writes in between, it answers ``episode(key)``,
``located`` and ``group_size`` as its rows do."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from backends.graph import indexed as graph_index
from backends.graph.index import Entry, EpisodeIndex
from backends.model import Episode

DIMENSION = 8
STEPS = st.lists(st.tuples(st.sampled_from(["put", "read", "drop", "rebuild"]),
                           st.integers(0, 2), st.integers(0, 3)), max_size=30)


def entry(n: int, version: int) -> Entry:
    # A rewrite may move an episode to another group or kind.
    episode = Episode.parse(id=f"ep-{n}", group_id=f"g{version % 2}",
                            kind=("note", "gotcha")[version // 2 % 2], name=f"memory {n}",
                            body=f"version {version}", created_at=datetime(2026, 1, 1, tzinfo=UTC))
    return Entry(episode, episode.body, np.zeros(DIMENSION, dtype=np.float32))


@given(STEPS, st.integers(1, 4))
def test_a_decoded_episode_is_the_stored_one(steps: list[tuple[str, int, int]],
                                             kept: int) -> None:
    graph_index.DECODED, before = kept, graph_index.DECODED  # a small cache evicts too
    index = EpisodeIndex.open(None, DIMENSION, "test")
    model: dict[str, Episode] = {}
    try:
        for step, n, version in steps:
            key = f"ep-{n}"
            if step == "put":
                written = entry(n, version)
                index.put([written])
                model[key] = written.episode
            elif step == "drop":
                index.drop(key)
                model.pop(key, None)
            elif step == "rebuild":
                written = entry(n, version)
                index.rebuilt([written])
                model = {key: written.episode}
            assert index.episode(key) == model.get(key)
            assert index.located([key]) == {k: (e.group_id, e.kind) for k, e in model.items()
                                            if k == key}
            for group in ("g0", "g1"):
                assert index.group_size(group) == sum(e.group_id == group
                                                      for e in model.values())
        assert all(index.episode(f"ep-{n}") == model.get(f"ep-{n}") for n in range(6))
        assert index.located([f"ep-{n}" for n in range(6)]) == {
            k: (e.group_id, e.kind) for k, e in model.items()}
    finally:
        graph_index.DECODED = before
        index.close()
