"""A user's provider: graphiti's own OpenAI-compatible embedder (which covers a local Ollama),
configured from the environment, ``open_memory`` or the command line, makes the graph's
vectors; a change of embedder asks for ``reembed``; an endpoint that fails never costs a
memory. The endpoint is a scripted stand-in: no test touches the network."""

from __future__ import annotations

from pathlib import Path

import pytest

from backends.errors import BackendUnavailable, WriteFailed
from backends.graph import GraphBackend, remote
from backends.model import Episode
from graph.old_graph import reading
from graph.stand_ins import ScriptedEndpoint
from memory import open_memory
from memory.cli import main
from memory.store.config import Config, ConfigError, Provider
from memory.store.layers import Layered
from memory.store.providers import embedder_for

OLLAMA = "http://localhost:11434/v1"
GOTCHA = Episode.create(group_id="shop", kind="gotcha", name="cookie size",
                        body="`SessionStore` cookies break past 4 KB in src/auth/session.py")


def test_providers_come_from_the_environment_and_arguments(tmp_path: Path) -> None:
    env = {"DUALMEM_EMBEDDER": f"nomic-embed-text@{OLLAMA}", "DUALMEM_EMBEDDER_DIMENSION": "768",
           "DUALMEM_LLM": "gpt-4o-mini", "OPENAI_API_KEY": "sk-secret"}
    config = Config.from_env(env, home=tmp_path)
    assert config.embedder == Provider("nomic-embed-text", OLLAMA, "sk-secret", 768)
    assert config.llm == Provider("gpt-4o-mini", None, "sk-secret", None)
    assert "sk-secret" not in repr(config)
    chosen = Config.from_env(env, home=tmp_path, embedder=f"all-minilm@{OLLAMA}", llm=None)
    assert chosen.embedder is not None and chosen.embedder.model == "all-minilm"
    assert Config.from_env({}, home=tmp_path).embedder is None  # offline by default
    made = embedder_for(config)
    assert made is not None and (made.name, made.dimension) == (
        "openai-compatible:nomic-embed-text", 768)


@pytest.mark.parametrize(("env", "says"), [
    ({"DUALMEM_EMBEDDER": "m@ftp://host"}, "MODEL@http"),
    ({"DUALMEM_EMBEDDER": "@http://host/v1"}, "MODEL@http"),
    ({"DUALMEM_EMBEDDER": f"m@{OLLAMA}", "DUALMEM_EMBEDDER_DIMENSION": "-3"}, "positive"),
    ({"DUALMEM_LLM": "gpt-4o"}, "key"),
])
def test_a_bad_provider_setting_is_named(tmp_path: Path, env: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        Config.from_env(env, home=tmp_path)


def test_the_command_line_says_what_is_wrong(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--home", str(tmp_path), "--embedder", "m@ftp://x", "status"]) == 1
    assert "MODEL@http" in capsys.readouterr().err


async def test_vectors_come_from_the_configured_embedder(tmp_path: Path) -> None:
    endpoint = ScriptedEndpoint(dimension=64)
    embedder = remote.embedder("nomic-embed-text", url=OLLAMA, dimension=64,
                               http_client=endpoint.client)
    async with open_memory(tmp_path / "home", "graph", embedder=embedder) as store:
        await store.upsert(GOTCHA)
        hits = await store.search("session cookies", group_ids=["shop"])
    assert [hit.episode.id for hit in hits] == [GOTCHA.id]
    assert "session cookies" in endpoint.inputs  # the query's vector came from it too
    assert "SessionStore" in endpoint.inputs  # and graphiti's entity name embeddings
    # Another embedder is refused until the vectors are made again with it.
    with pytest.raises(BackendUnavailable, match="embedder mismatch"):
        await GraphBackend.open(Config(home=tmp_path / "home").graph_dir)
    assert await GraphBackend.reembed(Config(home=tmp_path / "home").graph_dir) == 1
    with reading(Config(home=tmp_path / "home").graph_dir) as rows:
        sizes = rows("MATCH (n:Entity) RETURN DISTINCT size(n.name_embedding)")
    assert sizes == [[128]]  # the built-in's size: entity names re-embedded too


async def test_a_failing_endpoint_costs_no_memory(tmp_path: Path) -> None:
    endpoint = ScriptedEndpoint(dimension=64)
    embedder = remote.embedder("m", url=OLLAMA, dimension=64, http_client=endpoint.client)
    async with open_memory(tmp_path / "graph-only", "graph", embedder=embedder) as store:
        await store.upsert(GOTCHA)
        endpoint.failing = True
        with pytest.raises(WriteFailed, match="embedder"):
            await store.upsert(GOTCHA.model_copy(update={"name": "changed"}))
        hits = await store.search("SessionStore cookies", group_ids=["shop"])
        assert [hit.episode.id for hit in hits] == [GOTCHA.id]  # by its words alone
    endpoint.failing = False
    async with open_memory(tmp_path / "home", "auto", embedder=embedder) as store:
        assert isinstance(store, Layered) and store.holds_graph
        endpoint.failing = True
        receipt = await store.upsert(GOTCHA)
        assert receipt.pending  # in the journal; the graph takes it once the endpoint answers
        assert await store.get(GOTCHA.id) == GOTCHA
        endpoint.failing = False
        await store.repair()
        assert (await store.status()).pending == 0
