"""Building episodes for the contract tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from backends.model import Episode

BASE_TIME = datetime(2025, 3, 14, 9, 26, 53, 589793, tzinfo=UTC)


def make(number: int = 0, **fields: Any) -> Episode:
    """A plain episode; ``number`` keeps ids and times apart and in order."""
    values: dict[str, Any] = {
        "id": f"ep-{number:04d}",
        "group_id": "project_a",
        "kind": "session_insight",
        "name": f"episode {number}",
        "body": f"body of episode {number}",
        "created_at": BASE_TIME + timedelta(minutes=number),
    }
    values.update(fields)
    return Episode.parse(**values)
