"""Test data for migrations: episodes with every field set, and what a layer holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from backends.model import Episode
from backends.protocol import MemoryBackend

START = datetime(2026, 1, 1, tzinfo=UTC)


def make_episodes(count: int, *, groups: int = 4, prefix: str = "ep") -> list[Episode]:
    """Episodes with every field set, times included (one second apart, some superseded)."""
    return [
        Episode(
            id=f"{prefix}-{n:05d}",
            group_id=f"project-{n % groups}",
            kind=("pattern", "gotcha", "session_insight", "task_outcome")[n % 4],
            name=f"memory {n}",
            body=f"body of memory {n} about topic{n % 37} and module{n % 11}",
            source="test",
            created_at=START + timedelta(seconds=n),
            valid_at=START + timedelta(seconds=n, milliseconds=250),
            invalid_at=START + timedelta(days=1) if n % 10 == 0 else None,
        )
        for n in range(count)
    ]


async def dump(backend: MemoryBackend) -> list[dict[str, object]]:
    """Every field of every episode, in scan order."""
    return [episode.to_json() async for episode in backend.scan()]
