"""Any number of processes write the journal; the one holding the graph indexes them all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

CHILD = str(Path(__file__).with_name("dual_child.py"))
OWN = 50
EACH = 300


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, CHILD, *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_two_writers_land_in_files_and_the_holder_replays_them_once(tmp_path: Path) -> None:
    holder = start("hold", str(tmp_path), str(OWN))
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "ready", holder.stderr and holder.stderr.read()
        writers = [start("write", str(tmp_path), name, str(EACH)) for name in ("alpha", "beta")]
        for writer in writers:
            out, err = writer.communicate(timeout=120)
            assert writer.returncode == 0, err
            # The graph is held elsewhere: every write went to the file layer, pending.
            assert orjson.loads(out) == {"layers": {"file": EACH}, "pending": EACH}
        out, err = holder.communicate(f"{OWN + 2 * EACH}\n", timeout=600)
        assert holder.returncode == 0, err
    finally:
        holder.kill()
    report = orjson.loads(out)
    print(f"indexed {2 * EACH} episodes of other processes within {report['waited']:.2f} s")
    assert report["count"] == report["distinct"] == OWN + 2 * EACH
    assert report["groups"] == {"proc-holder": OWN, "proc-alpha": EACH, "proc-beta": EACH}
    status = report["status"]
    assert (status["layer"], status["pending"], status["journal"]) == ("graph", 0, OWN + 2 * EACH)
