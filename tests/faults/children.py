"""Starting the suite's child processes on this checkout's code (not whatever copy of dualmem the
interpreter would find first)."""

from __future__ import annotations

import os
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
