"""Take-over with real processes: a process writing through ``auto`` in a tight loop takes the
graph when its holder dies, and replays everything it wrote while it could not."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson

from backends.graph import GraphBackend
from fallback import FileBackend
from memory.store.config import Config

CHILD = str(Path(__file__).with_name("dual_child.py"))
WAIT = 600  # a bound on waiting under load, not a timing claim


def test_a_writer_in_a_tight_loop_takes_over_when_the_holder_dies(tmp_path: Path) -> None:
    with subprocess.Popen([sys.executable, CHILD, "hold", str(tmp_path), "0"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
            with subprocess.Popen([sys.executable, CHILD, "loop", str(tmp_path), "looper"],
                                  stdout=subprocess.PIPE, text=True) as looper:
                try:
                    assert looper.stdout is not None
                    assert looper.stdout.readline().strip() == "started"
                    os.kill(holder.pid, signal.SIGKILL)
                    # Reaped at once, as a parent does: a zombie still "lives" to kill(pid, 0),
                    # and the looper would wait for RETRY_LIVE instead of taking over.
                    holder.wait()
                    out, _ = looper.communicate(timeout=WAIT)
                finally:
                    looper.kill()
            assert looper.returncode == 0
        finally:
            holder.kill()
    report = orjson.loads(out)
    print(f"took over {report['after']:.2f} s after its first write, "
          f"having written {report['written']}")
    assert report["took_over"] and report["pending"] == 0

    config = Config(home=tmp_path)
    async def contents() -> tuple[set[str], set[str]]:
        graph = await GraphBackend.open(config.graph_dir)
        files = await FileBackend.open(config.files_dir, watch=False)
        try:
            return ({e.name async for e in graph.scan()}, {e.name async for e in files.scan()})
        finally:
            await graph.aclose()
            await files.aclose()

    in_graph, in_journal = asyncio.run(contents())
    wrote = {f"looper {n}" for n in range(report["written"])}
    assert in_graph == in_journal == wrote
