"""Every curation test runs against each real layer (tests/every_layer.py), in a tmp folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from every_layer import layer, store

from backends.protocol import MemoryBackend
from memory.curation.operations import Curator

__all__ = ["layer", "store"]

PROJECT = "shop"


@pytest.fixture
def curator(store: MemoryBackend, tmp_path: Path) -> Curator:
    return Curator(store, PROJECT, tmp_path / "files")
