"""A project folder with a file-layer memory home, and capture run in-process on it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from backends.model import Episode
from backends.protocol import MemoryBackend
from fallback import FileBackend
from memory.capture.reading import Budget
from memory.capture.run import Report, capture_transcript
from memory.store.project import project_id
from memory.store.selection import open_memory


@dataclass
class Project:
    folder: Path
    home: Path
    id: str
    store: MemoryBackend

    async def capture(self, transcript: Path, **options: Any) -> Report:
        async def store() -> MemoryBackend:
            return self.store

        root = options.pop("root", self.folder)
        budget = options.pop("budget", Budget())
        return await capture_transcript(self.home, self.id, transcript, store, root=root,
                                        budget=budget, **options)

    async def memories(self) -> list[Episode]:
        """The project's memories as an open reads them: it takes in at once what a hook's
        process wrote, which ``store`` (open, watching) takes in a moment later."""
        files = await FileBackend.open(self.home / "files", watch=False)
        try:
            return [episode async for episode in files.scan(group_ids=[self.id])]
        finally:
            await files.aclose()

    async def by_kind(self, kind: str) -> list[Episode]:
        return [episode for episode in await self.memories() if episode.kind == kind]


async def open_project(folder: Path, given_id: str | None = None) -> AsyncIterator[Project]:
    """A project in ``folder`` (its id ``given_id`` when given, so two homes share it)."""
    home = folder / ".dualmem"
    home.mkdir(parents=True)
    if given_id is not None:
        (home / "project.json").write_bytes(orjson.dumps({"project_id": given_id}))
    async with open_memory(home, "file") as store:
        yield Project(folder, home, project_id(home), store)


@pytest.fixture
async def project(tmp_path: Path) -> AsyncIterator[Project]:
    async for opened in open_project(tmp_path / "notes-app"):
        yield opened
