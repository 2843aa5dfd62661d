"""The relevance thresholds separate what a person would want in a task's context from
unrelated work, on every layer, in a small store and a larger one (docs/CONTEXT.md)."""

from __future__ import annotations

import pytest
from context_corpus import MEMORIES, filler, score_populations

from backends.protocol import MemoryBackend
from memory.context import Thresholds

from .conftest import fill


@pytest.mark.parametrize("unrelated", [40, 400])
async def test_thresholds_fall_between_relevant_and_unrelated(
    store: MemoryBackend, unrelated: int
) -> None:
    await fill(store, [*MEMORIES.values(), *filler(unrelated)])
    scores = await score_populations(store)
    limits = Thresholds()
    assert len(scores["relevant"]) >= 20 and len(scores["unrelated"]) >= 5
    assert min(scores["relevant"]) >= limits.familiar > limits.first_of_type
    assert max(scores["unrelated"]) < limits.first_of_type
