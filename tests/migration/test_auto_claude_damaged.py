"""Damaged Auto-Claude files never stop an import: each is skipped and named with its reason
(one with bytes that are not UTF-8 is read with them replaced, its good lines kept), everything
else is imported, and the import says "partial" (exit status 3); ``--strict`` stops at the
damaged file instead, writing nothing. A dry run writes nothing at all."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from backends.insights import Scope
from memory.cli import main
from memory.importers import AutoClaudeFolder
from memory.output import PARTIAL_EXIT
from migration.auto_claude_folder import build

GROUP = "proj"
SPEC = "project"


def truncate(file: Path) -> None:  # a crash mid-write
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])


def empty(file: Path) -> None:
    file.write_bytes(b"")


def folder_in_place(file: Path) -> None:  # unreadable, even for root
    file.unlink()
    file.mkdir()


def dangling_link(file: Path) -> None:  # unreadable: its target is gone
    file.unlink()
    file.symlink_to(file.with_name("gone.md"))


def json_list(file: Path) -> None:
    file.write_bytes(orjson.dumps([orjson.loads(file.read_bytes())]))


CASES: dict[str, tuple[str, Callable[[Path], None], str]] = {
    "truncated session": ("session_insights/session_002.json", truncate, "not valid JSON"),
    "empty codebase map": ("codebase_map.json", empty, "empty file"),
    "unreadable session": ("session_insights/session_001.json", folder_in_place,
                           "not a regular file"),
    "unreadable patterns": ("patterns.md", dangling_link, "is a symbolic link"),
    "session not an object": ("session_insights/session_001.json", json_list,
                              "expected a JSON object"),
}


def dualmem(capsys: pytest.CaptureFixture[str], home: Path, *argv: str, code: int) -> Any:
    assert main(["--home", str(home), "--backend", "file", *argv, "--json"]) == code
    return orjson.loads(capsys.readouterr().out)


def damaged_folder(root: Path, case: str) -> tuple[Path, Path, set[str]]:
    """The damaged memory folder, its damaged file, and the ids of everything else in it."""
    relative, damage, _ = CASES[case]
    memory = build(root / "damaged" / SPEC, nested_map=False)
    damage(memory / relative)
    intact = shutil.copytree(memory.parent, root / "intact" / SPEC, symlinks=True) / "memory"
    shutil.rmtree(intact / relative) if (intact / relative).is_dir() else (
        intact / relative).unlink()
    rest = {e.id for e in AutoClaudeFolder(intact, Scope(GROUP, SPEC)).episodes()}
    return memory, memory / relative, rest


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_damaged_file_is_skipped_and_named_and_the_rest_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    memory, damaged, rest = damaged_folder(tmp_path, case)
    home = tmp_path / "home"
    argv = ("migrate", "--from-auto-claude", str(memory), "--group", GROUP)

    preview = dualmem(capsys, home, *argv, "--dry-run", code=PARTIAL_EXIT)
    assert (preview["status"], preview["written"]) == ("partial", len(rest))
    report = dualmem(capsys, home, *argv, code=PARTIAL_EXIT)
    [skipped] = report["skipped_files"]
    assert skipped["path"] == str(damaged) and CASES[case][2] in skipped["reason"]
    assert (report["status"], report["verified"], report["ok"], report["written"]) == (
        "partial", True, False, len(rest))
    assert report["specs"][0]["skipped_files"] == [skipped]
    stored = dualmem(capsys, home, "list", "--group", GROUP, code=0)["episodes"]
    assert {e["id"] for e in stored} == rest

    assert main(["--home", str(home), "--backend", "file", *argv]) == PARTIAL_EXIT
    out, err = capsys.readouterr()
    assert out.startswith("partial: 1 spec(s)") and f"skipped {damaged}: " in out and err == ""
    assert dualmem(capsys, home, "status", code=0)["last_auto_claude_import"]["status"] == (
        "partial")


def test_strict_stops_at_the_damaged_file_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memory, damaged, _ = damaged_folder(tmp_path, "truncated session")
    home = tmp_path / "home"
    assert main(["--home", str(home), "--backend", "file", "migrate", "--from-auto-claude",
                 str(memory), "--group", GROUP, "--strict"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"dualmem: error: {damaged}: not valid JSON")
    assert dualmem(capsys, home, "list", "--group", GROUP, code=0)["episodes"] == []
    error = dualmem(capsys, home, "migrate", "--strict", code=2)["error"]
    assert "--spec and --strict go with --from-auto-claude" in error["message"]


def test_a_memory_the_store_refuses_makes_the_import_partial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = build(tmp_path / SPEC, nested_map=False)
    monkeypatch.setenv("DUALMEM_MAX_BODY_BYTES", "300")  # below the two sessions' bodies only
    home = tmp_path / "home"
    report = dualmem(capsys, home, "migrate", "--from-auto-claude", str(memory), "--group", GROUP,
                     code=PARTIAL_EXIT)
    refused = {skip["id"] for skip in report["refused"]}
    sessions = {e.id for e in AutoClaudeFolder(memory, Scope(GROUP, SPEC)).episodes()
                if e.kind == "session_insight"}
    assert (report["status"], report["skipped_files"], refused) == ("partial", [], sessions)
    stored = dualmem(capsys, home, "list", "--group", GROUP, code=0)["episodes"]
    assert len(stored) == report["scanned"] - len(sessions) == report["written"]


def test_bytes_not_utf8_are_replaced_and_every_good_line_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One Latin-1 line (an editor's save) used to drop the whole file, its good lines too.
    memory = build(tmp_path / SPEC, nested_map=False)
    gotchas = memory / "gotchas.md"
    before = {e.id for e in AutoClaudeFolder(memory, Scope(GROUP, SPEC)).episodes()}
    gotchas.write_bytes(gotchas.read_bytes() + "- Caf\u00e9 na\u00efve names are folded\n"
                        "- Every good line survives\n".encode("latin-1"))
    home = tmp_path / "home"
    argv = ("migrate", "--from-auto-claude", str(memory), "--group", GROUP)
    report = dualmem(capsys, home, *argv, code=PARTIAL_EXIT)
    [mended] = report["mended_files"]
    lines = gotchas.read_bytes().count(b"\n") - 1
    assert mended == {"path": str(gotchas), "reason": f"2 byte(s) not UTF-8 on 1 line(s) "
                                                      f"({lines}), replaced by U+FFFD"}
    assert (report["status"], report["skipped_files"], report["written"]) == (
        "partial", [], len(before) + 2)
    stored = {e["name"] for e in dualmem(capsys, home, "list", "--group", GROUP, "--kind",
                                         "gotcha", code=0)["episodes"]}
    assert {"Caf\ufffd na\ufffdve names are folded", "Every good line survives"} <= stored

    assert main(["--home", str(tmp_path / "strict"), "--backend", "file", *argv,
                 "--strict"]) == 1
    assert f"{gotchas}: not UTF-8 (byte 0xe9" in capsys.readouterr().err


def test_a_dry_run_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memory = build(tmp_path / SPEC, nested_map=False)
    home = tmp_path / "home"
    preview = dualmem(capsys, home, "migrate", "--from-auto-claude", str(memory), "--dry-run",
                      code=0)
    assert (preview["dry_run"], preview["status"]) == (True, "clean")
    assert not home.exists()  # neither project.json nor the ledger
    home.mkdir()
    dualmem(capsys, home, "migrate", "--from-auto-claude", str(memory), "--dry-run", code=0)
    assert list(home.iterdir()) == []
