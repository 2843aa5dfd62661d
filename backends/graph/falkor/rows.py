"""An episode as a FalkorDB server's graph holds it, read back from the columns of
``queries.COLUMNS``. Shared by the graph layer (``backend.py``, through graphiti's driver) and
by one-shot reads over the wire (``wire.py``), which must not import the driver."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from backends.model import Episode


def episode_of(row: dict[str, Any]) -> Episode:
    """The episode of a row of ``queries.COLUMNS`` (a flag is a boolean from the driver, the text
    ``true`` over the wire)."""
    return Episode(
        id=row["uuid"],
        group_id=row["group_id"],
        kind=row["kind"],
        name=row["name"],
        body=row["content"],
        source=row["source"],
        created_at=time_of(row["created_at"]),
        valid_at=time_of(row["valid_at"]) if row["valid_at_set"] in (True, "true") else None,
        invalid_at=time_of(row["invalid_at"]) if row["invalid_at"] is not None else None,
    )


def time_of(value: str) -> datetime:
    return datetime.fromisoformat(value).astimezone(UTC)

