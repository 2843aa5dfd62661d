"""Real layers on real folders: the file layer, the graph layer on embedded Kùzu, a ledger."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from backends.graph import GraphBackend
from fallback import FileBackend
from migrate import Ledger


@pytest.fixture
async def files(tmp_path: Path) -> AsyncIterator[FileBackend]:
    backend = await FileBackend.open(tmp_path / "files")
    yield backend
    await backend.aclose()


@pytest.fixture
async def graph(tmp_path: Path) -> AsyncIterator[GraphBackend]:
    backend = await GraphBackend.open(tmp_path / "graph")
    yield backend
    await backend.aclose()


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    opened = Ledger.open(tmp_path / "migration" / "ledger.sqlite3")
    yield opened
    opened.close()
