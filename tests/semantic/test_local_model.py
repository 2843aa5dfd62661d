"""A sentence-embedding model on this machine: found in a folder or a user's model cache,
loaded on first use only, and its vectors put a paraphrase near what it rewords."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backends.errors import ProviderFailed
from backends.graph import local_model

STORED = "Only one process may open the graph database read-write"
ASKED = "exclusive lock on the db"
OTHER = "The nightly backup copies the uploads bucket to cold storage"


def test_a_paraphrase_lands_nearer_than_an_unrelated_memory(
        model: local_model.LocalEmbedder) -> None:
    asked, stored, other = model.embed([ASKED, STORED, OTHER])
    assert model.dimension == 384 and model.name.startswith("local:")
    assert float(asked @ stored) > float(asked @ other) + 0.1
    assert np.allclose(np.linalg.norm(model.embed([STORED, ""]), axis=1), [1.0, 0.0], atol=1e-5)


def test_a_batch_embeds_each_text_as_alone(model: local_model.LocalEmbedder) -> None:
    together = model.embed([STORED, OTHER + " " + "word " * 300])
    assert np.allclose(together[0], model.embed([STORED])[0], atol=1e-4)


def test_a_model_is_found_by_name_in_a_users_model_cache(model_folder: Path,
                                                         tmp_path: Path) -> None:
    snapshot = tmp_path / "hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/abc"
    (snapshot / "onnx").mkdir(parents=True)
    (snapshot / "onnx" / "model.onnx").symlink_to(model_folder / "model.onnx")
    (snapshot / "tokenizer.json").symlink_to(model_folder / "tokenizer.json")
    env = {"HF_HUB_CACHE": str(tmp_path / "hub")}
    assert local_model.find_model("sentence-transformers/all-MiniLM-L6-v2", env) == snapshot
    with pytest.raises(ProviderFailed, match="not in a model cache"):
        local_model.find_model("BAAI/bge-small-en-v1.5", env)


def test_a_folder_without_a_model_is_named(tmp_path: Path) -> None:
    with pytest.raises(ProviderFailed, match=r"no model\.onnx or onnx/model\.onnx"):
        local_model.find_model(str(tmp_path))


def test_nothing_is_loaded_until_texts_are_embedded(model_folder: Path, tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not a model")
    (tmp_path / "tokenizer.json").symlink_to(model_folder / "tokenizer.json")
    damaged = local_model.embedder(str(tmp_path))  # opens nothing yet
    assert damaged.dimension == local_model.DEFAULT_DIMENSION
    with pytest.raises(ProviderFailed, match="cannot load"):
        damaged.embed([STORED])


def test_configuring_the_model_imports_no_runtime(model_folder: Path) -> None:
    from test_import_cost import heavy_modules_after

    script = f"""
        from memory.store.config import Config
        from memory.store.providers import embedder_for
        embedder_for(Config.from_env({{"DUALMEM_EMBEDDER": "local:{model_folder}"}}))
    """
    assert heavy_modules_after(script, ("onnxruntime", "tokenizers")) == []
    assert heavy_modules_after(script + "\n        import backends.graph.local_model as m\n"
                               "        m.embedder(" + repr(str(model_folder)) + ").embed(['x'])",
                               ("onnxruntime", "tokenizers")) == ["onnxruntime", "tokenizers"]


def test_a_local_model_is_an_embedder_setting_only(tmp_path: Path) -> None:
    from memory.store.config import Config, ConfigError, Provider

    config = Config.from_env({"DUALMEM_EMBEDDER": "local:/models/m",
                              "DUALMEM_EMBEDDER_DIMENSION": "768"}, home=tmp_path)
    assert config.embedder == Provider("local:/models/m", dimension=768)  # no key, no URL
    for wrong in ({"DUALMEM_LLM": "local:/models/m"}, {"DUALMEM_EMBEDDER": "local:"}):
        with pytest.raises(ConfigError, match="names an embedder only"):
            Config.from_env(wrong, home=tmp_path)


def test_the_runtime_keeps_no_usage_events_to_send(model_folder: Path, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    script = ("from backends.graph import local_model as m; "
              f"m.embedder({str(model_folder)!r}).embed(['x'])")
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("ORT_DISABLE_TELEMETRY", None)
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=300,
                   cwd=Path(__file__).resolve().parents[2])
    assert [p.relative_to(tmp_path) for p in tmp_path.rglob("*")] == []
