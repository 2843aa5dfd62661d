"""``dualmem migrate``: dry run, replay, re-run, prune after a clean check, Auto-Claude import."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from memory.cli import main
from migration.auto_claude_folder import EXPECTED_KINDS, build


def dualmem(capsys: pytest.CaptureFixture[str], home: Path, *argv: str, code: int = 0) -> Any:
    assert main(["--home", str(home), *argv, "--json"]) == code
    return orjson.loads(capsys.readouterr().out)


def add_to_files(capsys: pytest.CaptureFixture[str], home: Path, key: str, body: str) -> None:
    dualmem(capsys, home, "--backend", "file", "add", "--group", "proj", "--kind", "pattern",
            "--name", key, "--body", body, "--key", key)


def listed(capsys: pytest.CaptureFixture[str], home: Path, layer: str) -> Any:
    """The episodes of group proj in one layer."""
    return dualmem(capsys, home, "--backend", layer, "list", "--group", "proj")["episodes"]


def test_migrate_reports_replays_once_and_prunes_a_graph_alone_home_after_a_clean_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for key in ("a", "b", "c"):
        add_to_files(capsys, tmp_path, key, f"pattern {key}")

    preview = dualmem(capsys, tmp_path, "migrate", "--dry-run")
    assert (preview["dry_run"], preview["written"], preview["verification"]) == (True, 3, None)
    first = dualmem(capsys, tmp_path, "migrate")
    assert (first["written"], first["ok"], first["pruned"]) == (3, True, None)
    assert dualmem(capsys, tmp_path, "migrate")["written"] == 0

    # The graph's copy of "a" changes: prune must refuse, and the files stay as they are.
    dualmem(capsys, tmp_path, "--backend", "graph", "add", "--group", "proj", "--kind", "pattern",
            "--name", "a", "--body", "edited in the graph", "--key", "a")
    error = dualmem(capsys, tmp_path, "--backend", "graph", "migrate", "--prune", code=1)
    assert "not pruning" in error["error"]["message"]
    assert len(listed(capsys, tmp_path, "file")) == 3

    add_to_files(capsys, tmp_path, "a", "edited in the graph")
    pruned = dualmem(capsys, tmp_path, "--backend", "graph", "migrate", "--prune")
    assert (pruned["written"], pruned["pruned"]) == (1, 3)
    assert listed(capsys, tmp_path, "file") == []
    assert len(listed(capsys, tmp_path, "graph")) == 3


def test_auto_claude_import_twice_adds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = build(tmp_path / "auto-claude", nested_map=True)
    home = tmp_path / "home"
    total = sum(EXPECTED_KINDS.values())
    first = dualmem(capsys, home, "migrate", "--from-auto-claude", str(folder), "--group", "proj")
    assert (first["written"], first["ok"]) == (total, True)
    again = dualmem(capsys, home, "migrate", "--from-auto-claude", str(folder), "--group", "proj")
    assert (again["written"], again["unchanged"]) == (0, total)
    assert len(dualmem(capsys, home, "list", "--group", "proj")["episodes"]) == total


def test_migrate_in_auto_is_the_holders_replay_and_redoes_nothing_a_holder_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``migrate`` on the home's own graph runs the replay every holder runs: what a holder
    (here ``status``) brought into the graph is neither previewed nor written again, and a
    memory the holder has not seen yet is."""
    for key in ("a", "b", "c"):
        add_to_files(capsys, tmp_path, key, f"pattern {key}")
    dualmem(capsys, tmp_path, "status")  # holds the graph: catches it up with the journal
    assert dualmem(capsys, tmp_path, "migrate", "--dry-run")["written"] == 0
    done = dualmem(capsys, tmp_path, "migrate")
    assert (done["written"], done["scanned"], done["ok"]) == (0, 3, True)

    add_to_files(capsys, tmp_path, "d", "pattern d")
    assert dualmem(capsys, tmp_path, "migrate", "--dry-run")["written"] == 1
    assert dualmem(capsys, tmp_path, "migrate")["written"] == 1
    assert len(listed(capsys, tmp_path, "graph")) == 4
    status = dualmem(capsys, tmp_path, "status")["dual"]
    assert (status["pending"], status["last_migration"]["written"]) == (0, 1)


def test_migrate_in_auto_draws_its_progress_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holder's replay tells the bar each memory it writes: first the take-over making the
    graph equal to the journal, then a catch-up of what was written since."""
    for key in "abcde":
        add_to_files(capsys, tmp_path, key, f"pattern {key}")
    reader, writer = os.openpty()  # a real terminal: the bar is drawn on terminals only
    with os.fdopen(writer, "w") as terminal, os.fdopen(reader, "rb", buffering=0) as screen:
        monkeypatch.setattr(sys, "stderr", terminal)
        assert dualmem(capsys, tmp_path, "migrate")["written"] == 5
        add_to_files(capsys, tmp_path, "f", "pattern f")
        dualmem(capsys, tmp_path, "status")  # holds the graph: its take-over catches "f" up
        add_to_files(capsys, tmp_path, "g", "pattern g")
        assert dualmem(capsys, tmp_path, "migrate")["written"] == 1
        terminal.flush()
        os.set_blocking(reader, False)  # nothing drawn reads as nothing, not as a wait
        drawn = (screen.read(65536) or b"").decode()
    assert drawn.count("] 5/5") >= 1 and drawn.count("] 1/1") >= 1
    assert drawn.rstrip().endswith("] 1/1")
