"""Sequences of everyday commands, each a real ``dualmem`` process on one home: writes through
either layer, ``migrate`` (with ``--prune``), a holder killed, ``repair``, deletes through the
CLI and by hand, the journal's index deleted. After every step the journal holds exactly what
was written and not deleted, and once a command has held the graph, so does the graph: no
command may lose a memory or bring a deleted one back.

A fixed sequence from the red team's report opens the family (``migrate --prune`` in ``auto``
deleted every migrated memory from both layers); random sequences follow, ``ITERATIONS`` of
them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from faults.children import child_env

GROUP = "seq"
STEPS = 12
"""commands per random sequence (each a process of about a second)"""


def dualmem(home: Path, *argv: str, code: int | None = 0) -> Any:
    """``dualmem --home HOME ARGV --json`` as a process of its own; its JSON document."""
    done = subprocess.run([sys.executable, "-m", "memory", "--home", str(home), *argv, "--json"],
                          capture_output=True, env=child_env(), timeout=300, check=False)
    assert code is None or done.returncode == code, (argv, done.returncode, done.stderr[-2000:])
    return orjson.loads(done.stdout) if done.stdout.strip() else {"exit": done.returncode}


def listed(home: Path, layer: str) -> dict[str, str]:
    """id -> body of every episode of the group, as ``layer`` lists them."""
    found = dualmem(home, "--backend", layer, "list", "--group", GROUP)["episodes"]
    return {episode["id"]: episode["body"] for episode in found}


def add(home: Path, layer: str, key: str, body: str) -> str:
    stored = dualmem(home, "--backend", layer, "add", "--group", GROUP, "--kind", "pattern",
                     "--name", key, "--body", body, "--key", key)
    return str(stored["id"])


def test_migrate_prune_in_auto_is_refused_and_keeps_every_memory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    written = {add(home, "file", key, f"pattern {key}"): f"pattern {key}" for key in "abc"}
    assert dualmem(home, "migrate")["written"] == 3
    refused = dualmem(home, "migrate", "--prune", code=1)
    assert "not pruning" in refused["error"]["message"]
    dualmem(home, "status")  # holds the graph: it used to follow the pruned journal
    assert listed(home, "auto") == written
    assert listed(home, "graph") == written
    assert listed(home, "file") == written
