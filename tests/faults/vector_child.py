"""The graph index's files from another process: ``python vector_child.py write FOLDER`` indexes
batches of episodes until killed, printing each batch's number once ``put`` has returned;
``python vector_child.py read FOLDER`` answers, per line of JSON on stdin ({"token", "count",
"keys"}), whether the index is current and each key's nearest episode by its vector."""

from __future__ import annotations

import sys
import zlib
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import orjson

from backends.graph.embedder import Vectors
from backends.graph.index import Entry, EpisodeIndex
from backends.model import Episode

DIMENSION = 32
EMBEDDER = "test"
BATCH = 50


def vector_of(key: str) -> Vectors:
    """A vector of its own for each key (random directions: its nearest is itself)."""
    raw = np.random.default_rng(zlib.crc32(key.encode())).standard_normal(DIMENSION)
    out: Vectors = (raw / np.linalg.norm(raw)).astype(np.float32)
    return out


def entry(key: str) -> Entry:
    episode = Episode.parse(id=key, group_id="g", kind="note", name=key, body=f"body of {key}",
                            created_at=datetime(2026, 1, 1, tzinfo=UTC))
    return Entry(episode, episode.body, vector_of(key))


def nearest(index: EpisodeIndex, key: str) -> str | None:
    found = index.neighbours([], vector_of(key), groups=None, kinds=None, limit=1)
    return found[0][0] if found else None


def write(folder: Path) -> None:
    index = EpisodeIndex.open(folder, DIMENSION, EMBEDDER)
    print(orjson.dumps({"token": index.rebuilt([])}).decode(), flush=True)
    batch = 0
    while True:
        index.begin()  # as the graph store does before each write
        index.put([entry(f"ep-{batch}-{n}") for n in range(BATCH)])
        print(batch, flush=True)
        batch += 1


def read(folder: Path) -> None:
    index = EpisodeIndex.open(folder, DIMENSION, EMBEDDER)
    for line in sys.stdin:
        asked = orjson.loads(line)
        print(orjson.dumps({
            "current": index.current(asked["token"], asked["count"]),
            "nearest": [nearest(index, key) for key in asked["keys"]],
        }).decode(), flush=True)


if __name__ == "__main__":
    {"write": write, "read": read}[sys.argv[1]](Path(sys.argv[2]))
