"""The graph index's vectors across processes: a second process reads what the holder wrote
(rows appended while it has the file open, too), and ``kill -9`` while batches are appended
loses no batch whose ``put`` had returned."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import orjson

from backends.graph.index import EpisodeIndex
from faults.children import child_env, script
from faults.harness import ITERATIONS
from faults.vector_child import BATCH, DIMENSION, EMBEDDER, entry, nearest


def test_a_second_process_reads_what_the_holder_wrote(tmp_path: Path) -> None:
    holder = EpisodeIndex.open(tmp_path, DIMENSION, EMBEDDER)
    token = holder.rebuilt([entry(f"first-{n}") for n in range(10)])
    reader = subprocess.Popen(script("vector_child.py", "read", str(tmp_path)),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=child_env())
    assert reader.stdin is not None and reader.stdout is not None

    def ask(keys: list[str]) -> dict[str, object]:
        assert reader.stdin is not None and reader.stdout is not None
        reader.stdin.write(orjson.dumps({"token": token, "count": len(holder), "keys": keys})
                           + b"\n")
        reader.stdin.flush()
        return dict(orjson.loads(reader.stdout.readline()))

    try:
        first = [f"first-{n}" for n in range(10)]
        assert ask(first) == {"current": True, "nearest": first}
        # Written after the reader opened the file, past its end: the file grows under it.
        holder.put([entry(f"later-{n}") for n in range(300)])
        holder.put([entry("first-3")])  # a rewrite moves to a fresh row
        holder.drop("first-4")
        later = [f"later-{n}" for n in range(0, 300, 7)]
        answer = ask([*first, *later])
        assert answer["current"] is True
        assert answer["nearest"] == [None if key == "first-4" else key
                                     for key in [*first, *later]]
    finally:
        reader.stdin.close()
        reader.wait(timeout=60)
        reader.stdout.close()
        holder.close()
    assert reader.returncode == 0


def test_kill_9_mid_append_loses_no_acknowledged_batch(tmp_path: Path) -> None:
    rng = random.Random(os.environ.get("DUALMEM_FAULT_SEED"))
    for round_ in range(max(ITERATIONS, 4)):
        folder = tmp_path / str(round_)
        folder.mkdir()
        writer = subprocess.Popen(script("vector_child.py", "write", str(folder)),
                                  stdout=subprocess.PIPE, env=child_env())
        assert writer.stdout is not None
        token = orjson.loads(writer.stdout.readline())["token"]
        acknowledged = [int(writer.stdout.readline()) for _ in range(rng.randint(1, 6))]
        time.sleep(rng.uniform(0, 0.02))  # somewhere in the next batch
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=60)
        writer.stdout.close()
        index = EpisodeIndex.open(folder, DIMENSION, EMBEDDER)
        try:
            keys = [f"ep-{batch}-{n}" for batch in acknowledged for n in range(BATCH)]
            assert [nearest(index, key) for key in keys] == keys
            # Settled (no batch begun and unfinished): usable as it is, every row in the file.
            if index.current(token, len(index)):
                assert len(index) >= len(keys)
        finally:
            index.close()
