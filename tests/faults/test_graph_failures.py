"""What the disk-full family found in the graph layer, pinned down: a batch that failed may have
left rows behind (a COPY is not all-or-nothing when the disk fills), and writing it again must
replace them rather than fail on their keys forever."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import pytest

from backends.errors import WriteFailed
from backends.graph import GraphBackend, stored
from backends.graph.embedder import embed
from backends.graph.kuzu import rows
from backends.model import Episode
from backends.search.ranking import search_text


def memories(count: int) -> list[Episode]:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    return [Episode.parse(id=f"ep-{n:03d}", group_id="g", kind="note", name=f"memory {n}",
                          body=f"memory number {n}", created_at=start + timedelta(seconds=n))
            for n in range(count)]


async def test_a_batch_that_failed_half_written_can_be_written_again(tmp_path: Path) -> None:
    graph = await GraphBackend.open(tmp_path / "graph")
    try:
        episodes = memories(rows.COPY_MIN + 8)
        core = graph._open_core()
        early = episodes[:10]
        vectors = await embed(core.embedder, [search_text(e) for e in early])
        # Rows the graph does not know it holds, as a COPY that failed half-way leaves them:
        left = [rows.EpisodeWrite(e, stored.encode(v))
                for e, v in zip(early, vectors, strict=True)]
        await core.db.run(partial(rows.copy_episodes, writes=left, directory=core.directory))

        with pytest.raises(WriteFailed, match="duplicated primary key"):
            await graph.upsert_many(episodes)
        await graph.upsert_many(episodes)
        assert [e async for e in graph.scan()] == episodes
        assert await graph.count() == len(episodes)
        assert [h.episode.id for h in await graph.search("memory number 5", limit=1)] == ["ep-005"]
    finally:
        await graph.aclose()
