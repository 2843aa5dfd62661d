"""The Auto-Claude import reads only regular files inside the folder it was pointed at: a memory
file that is a link, or a spec folder linked out of it, is skipped and reported, and nothing it
leads to becomes a memory (issue 27, item 10)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from memory.cli import main
from memory.output import PARTIAL_EXIT
from migration.auto_claude_folder import build

GROUP = "proj"
BAIT = "plantedbait"
OUTSIDE_PATTERNS = f"# Patterns\n\n- {BAIT}: what the link leads to\n"


def imported(capsys: pytest.CaptureFixture[str], home: Path, project: Path) -> Any:
    argv = ["--home", str(home), "--backend", "file", "migrate", "--from-auto-claude",
            str(project), "--group", GROUP, "--json"]
    assert main(argv) == PARTIAL_EXIT
    report = orjson.loads(capsys.readouterr().out)
    assert main(["--home", str(home), "--backend", "file", "list", "--group", GROUP,
                 "--json"]) == 0
    stored = capsys.readouterr().out
    assert report["written"] > 0 and BAIT not in stored
    return report


def test_a_linked_memory_file_is_skipped_and_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    memory = build(project / ".auto-claude" / "specs" / "001-a", nested_map=False)
    outside = tmp_path / "outside.md"
    outside.write_text(OUTSIDE_PATTERNS)
    (memory / "patterns.md").unlink()
    (memory / "patterns.md").symlink_to(outside)

    report = imported(capsys, tmp_path / "home", project)
    [skipped] = report["skipped_files"]
    assert skipped["path"] == str(memory / "patterns.md")
    assert skipped["reason"] == f"lies outside {project} through a symbolic link"


def test_a_spec_folder_linked_out_of_the_import_is_skipped_and_each_file_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    specs = project / ".auto-claude" / "specs"
    build(specs / "001-a", nested_map=False)
    elsewhere = build(tmp_path / "elsewhere" / "002-b", nested_map=False)
    (elsewhere / "patterns.md").write_text(OUTSIDE_PATTERNS)
    (specs / "002-b").symlink_to(elsewhere.parent)

    report = imported(capsys, tmp_path / "home", project)
    skipped = {Path(s["path"]).relative_to(specs / "002-b" / "memory").as_posix(): s["reason"]
               for s in report["skipped_files"]}
    assert sorted(skipped) == ["codebase_map.json", "gotchas.md", "patterns.md",
                               "session_insights/session_001.json",
                               "session_insights/session_002.json"]
    assert all("outside" in reason and "symbolic link" in reason for reason in skipped.values())
