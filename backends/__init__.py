"""The ground floor: the model, the protocol, the errors and the ranking every layer shares.
The graph layer lives in ``backends.graph`` and is imported only when asked for."""

import backends.lean_typing as _typing
from backends.lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from backends.errors import (
        BackendUnavailable,
        DualmemError,
        FileRefused,
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
    "FileRefused",
    "Hit",
    "InvalidEpisode",
    "MemoryBackend",
    "MigrationError",
    "Receipt",
    "StoreCorrupt",
    "WriteFailed",
    "stable_id",
]

_SOURCES: dict[str, tuple[str, ...]] = {
    "backends.errors": (
        "BackendUnavailable", "DualmemError", "FileRefused", "InvalidEpisode", "MigrationError",
        "StoreCorrupt", "WriteFailed",
    ),
    "backends.model": ("Episode", "Hit", "Receipt", "stable_id"),
    "backends.protocol": ("MemoryBackend",),
}

if not _typing.TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_exports(__name__, _SOURCES)
