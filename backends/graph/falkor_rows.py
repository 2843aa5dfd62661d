"""An episode as a FalkorDB server's graph holds it, read back: the columns a query returns and
the episode they make. Shared by the graph layer (``falkor.py``, through graphiti's driver) and
by one-shot reads over the wire (``falkor_wire.py``), which must not import the driver."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from backends.model import Episode

OURS = "e.kind IS NOT NULL"
"""an ``Episodic`` node dualmem wrote (graphiti's own have no kind)"""
COLUMNS = (
    "e.uuid AS uuid, e.group_id AS group_id, e.kind AS kind, e.name AS name, "
    "e.content AS content, e.source_description AS source, e.created_at AS created_at, "
    "e.valid_at AS valid_at, e.valid_at_set AS valid_at_set, e.invalid_at AS invalid_at"
)


def episode_of(row: dict[str, Any]) -> Episode:
    """The episode of a row of ``COLUMNS`` (a flag is a boolean from the driver, the text
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
