"""Providers by name, ``[NAME:]MODEL[@URL]``: graphiti's own clients for OpenAI-compatible
endpoints (Ollama by name), Anthropic's LLM, Gemini's embedder and LLM and Voyage's embedder,
kept in the home by ``dualmem config set embedder|llm``. Each runs graphiti's real client
against a scripted stand-in of the remote service: no test touches the network."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel

from backends.errors import ProviderFailed
from backends.graph import remote
from backends.graph.embedder import embed
from backends.graph.provider_names import OLLAMA_URL
from graph.stand_ins import (
    ScriptedAnthropic,
    ScriptedEndpoint,
    ScriptedGemini,
    ScriptedVoyage,
)
from memory.cli import main
from memory.store.config import Config, ConfigError, Provider
from memory.store.providers import embedder_for, llm_for


class Area(BaseModel):
    area: str


def test_a_provider_is_named_and_its_own_key_variable_read(tmp_path: Path) -> None:
    env = {"DUALMEM_EMBEDDER": "voyage:voyage-3", "DUALMEM_EMBEDDER_DIMENSION": "1024",
           "DUALMEM_LLM": "anthropic:claude-haiku-4-5", "VOYAGE_API_KEY": "pa-v",
           "ANTHROPIC_API_KEY": "sk-ant", "OPENAI_API_KEY": "sk-openai"}
    config = Config.from_env(env, home=tmp_path)
    assert config.embedder == Provider("voyage-3", None, "pa-v", 1024, "voyage")
    assert config.llm == Provider("claude-haiku-4-5", None, "sk-ant", None, "anthropic")
    assert "sk-ant" not in repr(config)
    ollama = Config.from_env({"DUALMEM_EMBEDDER": "ollama:nomic-embed-text"}, home=tmp_path)
    assert ollama.embedder == Provider("nomic-embed-text", OLLAMA_URL, "none", None, "ollama")
    # a model of the default provider may hold a colon: only a known name is a provider
    tagged = Config.from_env({"DUALMEM_LLM": f"llama3:8b@{OLLAMA_URL}"}, home=tmp_path)
    assert tagged.llm == Provider("llama3:8b", OLLAMA_URL, "none", None, "openai")


@pytest.mark.parametrize(("env", "says"), [
    ({"DUALMEM_EMBEDDER": "anthropic:claude"}, "anthropic has no embedder"),
    ({"DUALMEM_LLM": "voyage:voyage-3"}, "voyage has no LLM"),
    ({"DUALMEM_LLM": "gemini:gemini-2.5-flash@http://x/v1", "GOOGLE_API_KEY": "g"},
     "takes no @URL"),
    ({"DUALMEM_LLM": "anthropic:claude"}, "ANTHROPIC_API_KEY"),
])
def test_a_provider_that_cannot_do_it_is_named(tmp_path: Path, env: dict[str, str],
                                               says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        Config.from_env(env, home=tmp_path)


def test_config_set_keeps_the_llm_and_embedder_by_name_never_a_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")  # every command reads the kept LLM
    home = tmp_path / ".dualmem"
    assert main(["--home", str(home), "init"]) == 0
    assert main(["--home", str(home), "config", "set", "llm", "gemini:gemini-2.5-flash"]) == 0
    assert main(["--home", str(home), "config", "set", "embedder", "ollama:all-minilm"]) == 0
    capsys.readouterr()
    config = Config.from_env({"GOOGLE_API_KEY": "g-key"}, home=home)
    assert config.llm == Provider("gemini-2.5-flash", None, "g-key", None, "gemini")
    assert config.embedder is not None and config.embedder.provider == "ollama"
    assert b"g-key" not in (home / "config.json").read_bytes()
    assert main(["--home", str(home), "config", "show"]) == 0
    assert "llm = gemini:gemini-2.5-flash" in capsys.readouterr().out


async def test_ollama_by_name_embeds_through_the_openai_protocol() -> None:
    endpoint = ScriptedEndpoint(dimension=32)
    made = remote.embedder("all-minilm", provider="ollama", url=OLLAMA_URL, dimension=32,
                           http_client=endpoint.client)
    vectors = await embed(made, ["session cookies"])
    assert made.name == "openai-compatible:all-minilm"  # vectors made before names were kept
    assert endpoint.inputs == ["session cookies"] and vectors.shape == (1, 32)


async def test_gemini_embeds_and_answers_through_graphiti_s_clients() -> None:
    service = ScriptedGemini(dimension=16, script=['{"area": "payments"}'])
    made = remote.embedder("gemini-embedding-001", provider="gemini", key="g", dimension=16,
                           client=service)
    vectors = await embed(made, ["refund webhook", "retry budget"])
    assert made.name == "gemini:gemini-embedding-001" and vectors.shape == (2, 16)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert service.inputs == ["refund webhook", "retry budget"]
    client = remote.llm("gemini-2.5-flash", provider="gemini", key="g", client=service)
    assert await remote.answer(client, "Name the area.", "refunds", Area) == {"area": "payments"}


async def test_voyage_embeds_and_its_failure_is_provider_failed() -> None:
    service = ScriptedVoyage(dimension=8)
    made = remote.embedder("voyage-3", provider="voyage", key="v", dimension=8, client=service)
    assert (await embed(made, ["a lock on the db"])).shape == (1, 8)
    service.failing = True
    with pytest.raises(ProviderFailed, match="voyage:voyage-3"):
        await embed(made, ["again"])


async def test_anthropic_answers_through_graphiti_s_client() -> None:
    service = ScriptedAnthropic([{"area": "auth"}])
    client = remote.llm("claude-haiku-4-5", provider="anthropic", key="k",
                        http_client=service.client)
    assert await remote.answer(client, "Name the area.", "session cookies", Area) == {
        "area": "auth"}
    assert service.requests[0]["model"] == "claude-haiku-4-5"
    assert service.requests[0]["tools"][0]["name"] == "Area"


def test_the_store_makes_each_configured_provider_s_client(tmp_path: Path) -> None:
    env = {"DUALMEM_EMBEDDER": "gemini:gemini-embedding-001", "DUALMEM_LLM":
           "anthropic:claude-haiku-4-5", "GOOGLE_API_KEY": "g", "ANTHROPIC_API_KEY": "a"}
    config = Config.from_env(env, home=tmp_path)
    made = embedder_for(config)
    assert made is not None and made.name == "gemini:gemini-embedding-001"
    assert type(llm_for(config)).__name__ == "AnthropicClient"
