"""Starting the suite's child processes on this checkout's code (not whatever copy of dualmem the
interpreter would find first)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def child_env(**extra: str) -> dict[str, str]:
    """This environment, with this checkout and its tests (as pytest has them) on the path."""
    env = dict(os.environ)
    paths = [str(REPO), str(REPO / "tests"), env.get("PYTHONPATH")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    env["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    env.update(extra)
    return env


def script(name: str, *args: str) -> list[str]:
    """The command line running ``tests/faults/<name>`` with ``args``."""
    return [sys.executable, str(HERE / name), *args]


def sigkill(child: asyncio.subprocess.Process) -> None:
    """SIGKILL ``child`` unless it has ended. Not ``child.send_signal``/``kill``: they poll the
    child first, and on a loaded machine that poll can reap one that has just exited before
    asyncio's watcher thread does, which then reports it as exit 255 (a crash) instead of how
    it really ended."""
    if child.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGKILL)
