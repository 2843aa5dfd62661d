"""The graph with a local model configured finds a memory by what it means: its vectors, the
entity names' and the question's come from the model, ranked beside the words; a graph made
with another embedder is re-embedded with it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from graph.old_graph import reading

from backends.errors import BackendUnavailable
from backends.graph import GraphBackend, local_model
from backends.model import Episode
from memory import open_memory
from memory.cli import main
from memory.store.config import Config
from memory.store.providers import embedder_for

MEMORIES = [Episode.create(group_id="shop", kind="gotcha", name=name, body=body) for name, body in (
    ("graph lock", "Only one process may open the graph database read-write"),
    ("backup", "The nightly backup copies the uploads bucket to cold storage"),
    ("cookies", "`SessionStore` cookies break past 4 KB in src/auth/session.py"),
    ("retries", "Retry outbound HTTP calls three times with exponential backoff"),
)]
ASKED = "attempts again after a remote failure, with growing delays"  # no word in common


async def first_found(store: GraphBackend, query: str) -> str | None:
    hits = await store.search(query, group_ids=["shop"], limit=3)
    return hits[0].episode.name if hits else None


async def test_a_paraphrase_finds_its_memory_through_the_model(
        tmp_path: Path, model: local_model.LocalEmbedder) -> None:
    built_in = await GraphBackend.open(tmp_path / "built-in")
    meaning = await GraphBackend.open(tmp_path / "meaning", embedder=model)
    try:
        for store in (built_in, meaning):
            await store.upsert_many(MEMORIES)
        assert await first_found(built_in, ASKED) != "retries"
        assert await first_found(meaning, ASKED) == "retries"
        assert await first_found(meaning, "SessionStore cookie size") == "cookies"  # words count
    finally:
        await built_in.aclose()
        await meaning.aclose()


async def test_a_graph_of_another_embedder_is_reembedded_with_the_model(
        tmp_path: Path, model: local_model.LocalEmbedder) -> None:
    folder = tmp_path / "graph"
    store = await GraphBackend.open(folder)
    await store.upsert_many(MEMORIES)
    await store.aclose()
    with pytest.raises(BackendUnavailable, match="embedder mismatch"):
        await GraphBackend.open(folder, embedder=model)
    assert await GraphBackend.reembed(folder, model) == len(MEMORIES)
    with reading(folder) as rows:
        sizes = rows("MATCH (n:Entity) RETURN DISTINCT size(n.name_embedding)")
    assert sizes == [[model.dimension]]  # entity names re-embedded by the model too
    store = await GraphBackend.open(folder, embedder=model)
    try:
        assert await first_found(store, ASKED) == "retries"
    finally:
        await store.aclose()


def test_the_model_is_configured_in_the_home(tmp_path: Path, model_folder: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    assert main(["--home", str(home), "init"]) == 0
    assert main(["--home", str(home), "config", "set", "embedder", f"local:{model_folder}"]) == 0
    assert main(["--home", str(home), "reembed"]) == 0  # init made the graph with the built-in
    capsys.readouterr()
    made = embedder_for(Config.from_env({}, home=home))
    assert isinstance(made, local_model.LocalEmbedder) and made.folder == model_folder

    async def search() -> str:
        async with open_memory(home, "graph", embedder=made) as store:
            assert isinstance(store, GraphBackend)
            await store.upsert_many(MEMORIES)
            return (await store.search(ASKED, group_ids=["shop"]))[0].episode.name

    assert asyncio.run(search()) == "retries"


def test_a_prompt_hook_with_the_model_configured_never_loads_it(tmp_path: Path,
                                                                model_folder: Path) -> None:
    # How a one-shot hook keeps its latency budget: under auto it answers from the journal by
    # words; the model is loaded only by a process that holds the graph.
    from test_import_cost import HEAVY, heavy_modules_after, stored_then_searched

    script = stored_then_searched(tmp_path, "--embedder", f"local:{model_folder}", search=False)
    assert heavy_modules_after(script, HEAVY) == []


def _named(name: str, body: str, serial: int) -> Episode:
    return Episode.parse(id=f"{serial:08x}-0000-4000-8000-000000000000", group_id="shop",
                         kind="gotcha", name=name, body=body,
                         created_at=datetime(2026, 1, 1, tzinfo=UTC))


# Each names src/jobs/retry.py: the entity links every one of them as firmly. The path-only
# ones have the smallest ids, so that they win any tie.
NAMED_FILE = [_named(*row, serial) for serial, row in enumerate((
    ("path only", "src/jobs/retry.py is owned by the platform team"),
    ("path only too", "src/jobs/retry.py was split out of the worker in March"),
    ("house style", "House style for Python modules and the rules the team agreed to"),
    ("guidelines", "Coding guidelines to respect when changing a module"),
    ("norms", "Code style norms every module should obey"),
    ("conventions", "Conventions for src/jobs/retry.py: style rules as everywhere"),
    ("conventions followed", "Conventions in src/jobs/retry.py follow the worker's"),
    ("jitter", "src/jobs/retry.py adds jitter before sleeping"),
), start=1)]


async def test_a_word_hit_the_vectors_push_down_keeps_its_words_for_the_links(
        tmp_path: Path, model: local_model.LocalEmbedder) -> None:
    # The vectors rank the style memories (no link) above "conventions followed"; cut there
    # before the links, it lost its words' score and tied with the memories only the path
    # links, losing on its id (the coding benchmark's "conventions in src/jobs/retry.py?").
    store = await GraphBackend.open(tmp_path / "graph", embedder=model)
    try:
        await store.upsert_many(NAMED_FILE)
        hits = await store.search("Which conventions and style norms apply when editing "
                                  "src/jobs/retry.py, a module adding jitter?",
                                  group_ids=["shop"], limit=3)
    finally:
        await store.aclose()
    assert {hit.episode.name for hit in hits} == {"conventions", "jitter",
                                                  "conventions followed"}
