"""dualmem: a memory for coding agents that survives between sessions and never stops working.

    from memory import open_memory, Episode
"""

from backends import (
    BackendUnavailable,
    DualmemError,
    Episode,
    Hit,
    InvalidEpisode,
    MemoryBackend,
    MigrationError,
    Receipt,
    StoreCorrupt,
    WriteFailed,
    stable_id,
)
from memory.config import Config, ConfigError
from memory.selection import Selection, open_memory

__all__ = [
    "BackendUnavailable",
    "Config",
    "ConfigError",
    "DualmemError",
    "Episode",
    "Hit",
    "InvalidEpisode",
    "MemoryBackend",
    "MigrationError",
    "Receipt",
    "Selection",
    "StoreCorrupt",
    "WriteFailed",
    "open_memory",
    "stable_id",
]
