"""Whether a memory still holds: superseded and deprecated memories are history, not advice.

Ended validity (``invalid_at`` passed) is how ``supersede_adr`` and ``deprecate_adr`` end a
decision; a decision written by hand, imported or edited in its file may only say so in its
body (``"status": "superseded"``), and is as much out of force."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol


class Valid(Protocol):
    """What ``in_force`` reads of a memory: an ``Episode``, or a record read from the index
    (the tool hook's quick answer imports neither the model nor the store)."""

    @property
    def invalid_at(self) -> datetime | None: ...
    @property
    def data(self) -> Any: ...


ENDED_STATUSES = frozenset({"superseded", "deprecated"})


def in_force(episode: Valid, at: datetime | None = None) -> bool:
    """``episode`` holds at ``at`` (now when None): its validity has not ended by then, or,
    when it was never ended, its body does not say it was superseded or deprecated."""
    ended = episode.invalid_at
    if ended is not None:  # ended when it was superseded: in force before that
        return ended > (at or datetime.now(UTC))
    data = episode.data
    status = data.get("status") if isinstance(data, dict) else None
    return not (isinstance(status, str) and status.strip().casefold() in ENDED_STATUSES)
