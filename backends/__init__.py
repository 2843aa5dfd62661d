"""The ground floor: the model, the protocol, the errors and the ranking every layer shares.
The graph layer lives in ``backends.graph`` and is imported only when asked for."""

from backends.errors import (
    BackendUnavailable,
    DualmemError,
    InvalidEpisode,
    MigrationError,
    StoreCorrupt,
    WriteFailed,
)
from backends.model import Episode, Hit, Receipt, stable_id
from backends.protocol import MemoryBackend

__all__ = [
    "BackendUnavailable",
    "DualmemError",
    "Episode",
    "Hit",
    "InvalidEpisode",
    "MemoryBackend",
    "MigrationError",
    "Receipt",
    "StoreCorrupt",
    "WriteFailed",
    "stable_id",
]
