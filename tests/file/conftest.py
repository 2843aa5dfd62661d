"""A file layer in a fresh home folder, closed after the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fallback import FileBackend


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
async def files(home: Path) -> AsyncIterator[FileBackend]:
    backend = await FileBackend.open(home / "files")
    yield backend
    await backend.aclose()
