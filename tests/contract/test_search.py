"""Search contract: relevant first, scores in [0, 1], filtered, typo tolerant, never raising."""

from __future__ import annotations

import json

import pytest

from backends.protocol import MemoryBackend
from contract.episodes import make


@pytest.fixture
async def filled(store: MemoryBackend) -> MemoryBackend:
    bodies = [
        "Run database migrations with alembic before starting the api server",
        "The database connection pool is configured in settings.py",
        "Kubernetes deployments are rendered with helm charts",
        "Frontend tests use vitest and testing-library",
        "Never commit secrets; the pre-commit hook scans for api keys",
    ]
    for number, body in enumerate(bodies):
        await store.upsert(make(number, body=body, name=f"note {number}"))
    return store


async def test_the_more_relevant_episode_comes_first(filled: MemoryBackend) -> None:
    hits = await filled.search("database migrations alembic")
    assert [hit.episode.id for hit in hits[:2]] == ["ep-0000", "ep-0001"]
    # One layer answers a query; the dual store names the one it asked (graph or files).
    assert len({hit.layer for hit in hits}) == 1
    assert hits[0].layer in {filled.layer, "graph", "file"}


async def test_scores_lie_in_the_unit_interval_best_first(filled: MemoryBackend) -> None:
    hits = await filled.search("api database helm tests")
    assert len(hits) >= 4
    scores = [hit.score for hit in hits]
    assert all(0.0 <= score <= 1.0 for score in scores)
    assert scores == sorted(scores, reverse=True)


async def test_limit_caps_the_hits(filled: MemoryBackend) -> None:
    assert len(await filled.search("api database helm tests", limit=2)) == 2


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("kubernetis", "ep-0002"),
        ("databse", "ep-0000"),
        ("alembik", "ep-0000"),
        ("vitesst", "ep-0003"),
    ],
)
async def test_one_wrong_letter_still_finds_the_memory(
    filled: MemoryBackend, query: str, expected: str
) -> None:
    hits = await filled.search(query)
    assert expected in [hit.episode.id for hit in hits[:2]]


async def test_case_and_punctuation_are_folded(filled: MemoryBackend) -> None:
    hits = await filled.search("SETTINGS.PY, (pool)!")
    assert hits[0].episode.id == "ep-0001"


async def test_search_filters_by_group_and_kind(store: MemoryBackend) -> None:
    for number, (group, kind) in enumerate(
        [("project_a", "pattern"), ("project_b", "pattern"), ("project_a", "gotcha")]
    ):
        await store.upsert(make(number, group_id=group, kind=kind, body="retry flaky uploads"))
    async def ids(group_ids: list[str] | None = None, kinds: list[str] | None = None) -> set[str]:
        found = await store.search("flaky uploads", group_ids=group_ids, kinds=kinds)
        return {hit.episode.id for hit in found}

    assert await ids() == {"ep-0000", "ep-0001", "ep-0002"}
    assert await ids(group_ids=["project_a"]) == {"ep-0000", "ep-0002"}
    assert await ids(kinds=["pattern"]) == {"ep-0000", "ep-0001"}
    assert await ids(group_ids=["project_b"], kinds=["gotcha"]) == set()


@pytest.mark.parametrize("query", ["", "   ", "?!.,;", "the of and"])
async def test_queries_without_words_return_without_raising(
    filled: MemoryBackend, query: str
) -> None:
    hits = await filled.search(query)
    assert isinstance(hits, list) and all(0.0 <= hit.score <= 1.0 for hit in hits)


async def test_a_ten_thousand_character_query_is_answered(filled: MemoryBackend) -> None:
    # How fast is measured by bench.long_query, not asserted here.
    query = ("database helm secrets " * 500)[:10_000]
    hits = await filled.search(query)
    assert {hit.episode.id for hit in hits} >= {"ep-0000", "ep-0002", "ep-0004"}


async def test_where_a_memory_was_recorded_is_not_searched(store: MemoryBackend) -> None:
    # An imported memory carries its spec ("002-refund-webhooks") and session: every memory of
    # the spec would match "webhooks" if they were searched.
    recorded = make(1, kind="pattern", name="Use a unit of work",
                    body=json.dumps({"pattern": "Use a unit of work around money movements",
                                     "spec": "002-refund-webhooks", "session": 7}))
    await store.upsert(recorded)
    assert await store.search("webhooks") == []
    assert [hit.episode.id for hit in await store.search("unit of work")] == [recorded.id]
