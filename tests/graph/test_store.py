"""What the graph layer promises beyond the contract suite: UTC instants, batch writes, hybrid
search that stays quiet on no match, and handles that refuse work once closed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from backends.errors import BackendUnavailable, InvalidEpisode
from backends.graph import GraphBackend
from backends.model import Episode
from backends.protocol import BatchUpsert, MemoryBackend
from fallback import FileBackend


def note(key: str, body: str, **fields: object) -> Episode:
    values: dict[str, object] = {"group_id": "proj", "kind": "gotcha", "name": key, "body": body}
    values.update(fields)
    return Episode.create(key=key, **values)  # type: ignore[arg-type]


def test_it_is_a_memory_backend_with_batch_upsert(graph: GraphBackend) -> None:
    assert isinstance(graph, MemoryBackend)
    assert isinstance(graph, BatchUpsert)


async def test_times_come_back_as_the_same_utc_instants(tmp_path: Path) -> None:
    plus_two = timezone(timedelta(hours=2))
    written = note(
        "t", "times", created_at=datetime(2024, 5, 1, 12, 0, tzinfo=plus_two),
        valid_at=datetime(2024, 4, 30, 8, 30, 0, 1, tzinfo=plus_two),
        invalid_at=datetime(2024, 6, 1, tzinfo=UTC),
    )
    open_ended = note("u", "no validity window")
    graph = await GraphBackend.open(tmp_path / "graph")
    await graph.upsert_many([written, open_ended])
    await graph.aclose()

    graph = await GraphBackend.open(tmp_path / "graph")
    got = await graph.get(written.id)
    assert got == written
    assert got is not None and got.created_at == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert got.created_at.tzinfo is UTC
    assert await graph.get(open_ended.id) == open_ended  # valid_at stays None
    await graph.aclose()


async def test_upsert_many_keeps_the_last_version_of_an_id_and_answers_in_order(
    graph: GraphBackend,
) -> None:
    first, second = note("a", "first version"), note("b", "other")
    again = first.model_copy(update={"body": "second version"})
    receipts = await graph.upsert_many([first, second, again])
    assert [r.id for r in receipts] == [first.id, second.id, first.id]
    assert {r.layer for r in receipts} == {"graph"}
    assert await graph.get(first.id) == again
    assert await graph.count() == 2
    assert [h.episode.id for h in await graph.search("first")] == []
    assert [h.episode.id for h in await graph.search("second version")] == [first.id]


async def test_a_batch_with_an_oversized_body_stores_nothing(tmp_path: Path) -> None:
    graph = await GraphBackend.open(tmp_path / "graph", max_body_bytes=100)
    with pytest.raises(InvalidEpisode):
        await graph.upsert_many([note("ok", "small"), note("big", "x" * 101)])
    assert await graph.count() == 0
    await graph.aclose()


async def test_search_is_hybrid_but_a_query_nothing_matches_finds_nothing(
    graph: GraphBackend,
) -> None:
    await graph.upsert_many([
        note("db", "Kuzu allows one writer per database; readers wait for the lock"),
        note("ui", "Buttons use the shared theme colours"),
        note("ci", "Pipelines cache dependencies between runs", group_id="other"),
    ])
    typo = await graph.search("databse lok")
    assert typo[0].episode.name == "db" and 0.0 < typo[0].score <= 1.0
    assert await graph.search("xylophone quartz") == []
    assert [h.episode.name for h in await graph.search("cache", group_ids=["proj"])] == []
    assert [h.episode.name for h in await graph.search("cache", group_ids=["other"])] == ["ci"]
    assert await graph.search("theme", kinds=["pattern"]) == []
    assert await graph.search("theme", group_ids=[]) == []


async def test_a_rewrite_is_searched_by_its_new_text_only(graph: GraphBackend) -> None:
    episode = note("r", "the cache lives in redis")
    await graph.upsert(episode)
    await graph.upsert(episode.model_copy(update={"body": "the cache lives in memcached"}))
    assert await graph.search("redis") == []
    assert [h.episode.body for h in await graph.search("memcached")] == [
        "the cache lives in memcached"
    ]
    assert await graph.delete(episode.id)
    assert await graph.search("memcached") == []


async def test_a_closed_handle_refuses_work_and_closes_again_quietly(tmp_path: Path) -> None:
    graph = await GraphBackend.open(tmp_path / "graph")
    await graph.aclose()
    await graph.aclose()
    with pytest.raises(BackendUnavailable, match="closed"):
        await graph.search("anything")
    with pytest.raises(BackendUnavailable, match="closed"):
        await graph.upsert(note("late", "too late"))


class Synonyms:
    """A tiny 'semantic' embedder: words of one concept share a dimension."""

    name = "synonyms-for-tests"
    dimension = 8
    concepts = ({"car", "automobile", "vehicle"}, {"bug", "defect"}, {"fast", "quick"})

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                for dim, concept in enumerate(self.concepts):
                    out[row, dim] += word in concept
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


async def test_vectors_add_hits_below_every_lexical_match(tmp_path: Path) -> None:
    graph = await GraphBackend.open(tmp_path / "graph", embedder=Synonyms())
    await graph.upsert_many([note("car", "the car is parked"), note("auto", "automobile list"),
                             note("triage", "defect triage")])
    hits = await graph.search("automobile")
    assert [h.episode.name for h in hits] == ["auto", "car"]
    lexical, vector_only = hits
    assert lexical.score >= 0.05 >= vector_only.score > 0.0
    assert [h.episode.name for h in await graph.search("bug")] == ["triage"]
    assert await graph.search("quick") == []
    await graph.aclose()


async def test_lexical_scores_are_the_file_layers(tmp_path: Path) -> None:
    # Unshifted: context selection cuts relative to the best candidate, and the same cut must
    # mean the same on both layers.
    notes = [note("db", "Kuzu allows one writer per database; readers wait for the lock"),
             note("pool", "The database pool size comes from settings"),
             note("ui", "Buttons use the shared theme colours")]
    graph = await GraphBackend.open(tmp_path / "graph")
    files = await FileBackend.open(tmp_path / "files")
    try:
        for layer in (graph, files):
            await layer.upsert_many(notes)
        for query in ("database lock", "theme", "writer pool settings"):
            scores = [{h.episode.name: h.score for h in await layer.search(query)}
                      for layer in (graph, files)]
            assert scores[0] == pytest.approx(scores[1])
    finally:
        await graph.aclose()
        await files.aclose()


TRICKY = ['with "quotes"', "back\\slash \\n", "line1\nline2", "cr\r\nlf\r", "tab\there, comma",
          " spaced ", "émoji 🎉 ünïcode", '"', "\\", "end\\", "NULL", "[1,2]", '{"k": [1, "a"]}',
          "", "'single'"]


async def test_a_large_batch_round_trips_every_field_exactly(tmp_path: Path) -> None:
    """Many new plain episodes go in by COPY, the rest by CREATE: both keep every byte."""
    far = (datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC))
    batch = [
        Episode.parse(
            id=f"ep-{n:03d}", group_id=f"g{n % 3}", kind="note", name=f"note {n} «{n}»",
            body=f"{TRICKY[n % len(TRICKY)]} token{n}" if n % 17 else TRICKY[13],
            created_at=far[n % 2] if n % 10 == 0 else datetime(2024, 5, 1, 12, n % 60, n % 60,
                                                              tzinfo=timezone(timedelta(hours=2))),
            valid_at=None if n % 3 else datetime(2024, 1, 1, tzinfo=UTC),
            invalid_at=None if n % 4 else datetime(2030, 1, 1, 0, 0, 0, n, tzinfo=UTC),
        )
        for n in range(1, 120)
    ]
    batch.append(note("files", '{"files": ["a.py"]}'))  # an entity: the CREATE path
    graph = await GraphBackend.open(tmp_path / "graph")
    await graph.upsert_many(batch[:5])
    await graph.upsert_many([*batch[:3], *batch[3:]])  # three replacements among the new
    assert [hit.episode.id for hit in await graph.search("token42")] == ["ep-042"]
    await graph.aclose()

    graph = await GraphBackend.open(tmp_path / "graph")
    assert [e async for e in graph.scan()] == sorted(batch, key=lambda e: (e.created_at, e.id))
    assert [hit.episode.id for hit in await graph.search("token42")] == ["ep-042"]
    await graph.aclose()
    assert [p.name for p in (tmp_path / "graph").iterdir() if p.suffix == ".csv"] == []
