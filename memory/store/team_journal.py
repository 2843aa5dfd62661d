"""This home's journal as a team's one-shot read uses it (``memory.store.team_view``): what it
holds that the server does not yet, read through its index alone when the index has seen every
change on disk. Then a search or a hook on a team's server never opens the file layer, whose
modules and check of the disk it does not need; a write, a server that does not answer, or a
change made on disk by hand (the open takes it in) opens it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from backends.errors import FileRefused
from backends.model import Episode, Hit
from backends.protocol import Changes, Position
from backends.safe_files import refuse_links_in
from fallback.index import FileIndex
from fallback.index_search import search_index
from fallback.layout import Layout
from fallback.unseen import unseen

if TYPE_CHECKING:
    from fallback import FileBackend


class TeamJournal:
    """Open with ``open``; ``aclose`` it."""

    def __init__(self, root: Path, max_body_bytes: int, index: FileIndex | None,
                 files: FileBackend | None) -> None:
        self._root = root
        self._max_body_bytes = max_body_bytes
        self._index = index
        self._files = files

    @classmethod
    async def open(cls, root: Path, max_body_bytes: int) -> TeamJournal:
        """The index alone when it is current and nothing changed on disk without it; else the
        file layer (which builds the index, or takes the changes in)."""
        index = _index_alone(root)
        if index is not None:
            return cls(root, max_body_bytes, index, None)
        journal = cls(root, max_body_bytes, None, None)
        await journal.files()
        return journal

    async def files(self) -> FileBackend:
        """The file layer, opened at the first call (a write, or the journal answering
        alone)."""
        if self._files is None:
            from fallback import FileBackend  # the modules of writing: not for a read

            self._files = await FileBackend.open(self._root, max_body_bytes=self._max_body_bytes,
                                                 watch=False)
        return self._files

    def position(self) -> Position:
        return self._files.position() if self._files is not None else self._read().position()

    def changes_since(self, position: Position | None) -> Changes:
        if self._files is not None:
            return self._files.changes_since(position)
        return self._read().changes_since(position)

    async def get(self, episode_id: str) -> Episode | None:
        if self._files is not None:
            return await self._files.get(episode_id)
        return self._read().get(episode_id)

    async def search(self, query: str, *, group_ids: Sequence[str] | None,
                     kinds: Sequence[str] | None, limit: int) -> list[Hit]:
        if self._files is not None:
            return await self._files.search(query, group_ids=group_ids, kinds=kinds,
                                            limit=limit)
        return search_index(self._read(), query, group_ids=group_ids, kinds=kinds, limit=limit,
                            layer="file")

    async def aclose(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None
        if self._files is not None:
            await self._files.aclose()

    def _read(self) -> FileIndex:
        assert self._index is not None, "opened with the file layer or the index"
        return self._index


def _index_alone(root: Path) -> FileIndex | None:
    """The journal's index when it has seen every change on disk; None: open the file layer."""
    try:
        refuse_links_in(root)  # SQLite would follow a link out of the home: the layer says why
    except FileRefused:
        return None
    index = FileIndex.existing(root)
    if index is None:
        return None
    try:
        if not any(unseen(Layout(root.absolute()), index.files)):
            return index
    except (OSError, sqlite3.Error):
        pass  # the file layer's open says what is wrong
    index.close()
    return None
