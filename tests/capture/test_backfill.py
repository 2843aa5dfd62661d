"""``dualmem capture`` on a folder laid out as Claude Code lays it out: sessions oldest first,
each with its subagents, damaged lines counted, what cannot be read skipped and said, a dry run
writing nothing, and a second run writing nothing."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from capture.shapes import Transcript, working_session
from memory.capture.backfill import claude_folder
from memory.cli import main
from memory.output import PARTIAL_EXIT

OLDER = "1a1a1a1a-0000-4000-8000-000000000001"
NEWER = "2b2b2b2b-0000-4000-8000-000000000002"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["--backend", "file", "--json", *argv])
    return code, orjson.loads(capsys.readouterr().out)


def listed(capsys: pytest.CaptureFixture[str]) -> list[dict[str, str]]:
    code, document = run(capsys, "list")
    assert code == 0
    episodes: list[dict[str, str]] = document["episodes"]
    return episodes


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> Path:
    """A project with a memory home, and Claude Code's folder of its sessions."""
    project = tmp_path / "work" / "notes.app"
    project.mkdir(parents=True)
    monkeypatch.chdir(project)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert main(["--backend", "file", "init"]) == 0
    capsys.readouterr()
    folder = claude_folder(project, tmp_path / "user")
    # every character but letters and digits made '-' (underscores, dots and slashes too)
    assert folder.name == re.sub(r"[^A-Za-z0-9]", "-", str(project))
    older = working_session(str(project))
    older.session_id = OLDER
    older.save(folder / f"{OLDER}.jsonl")
    helper = Transcript(str(project), session_id=OLDER, sidechain=True)
    helper.prompt("Find the exporter")
    helper.read("src/notes/exporter.py")
    helper.say("`exporter.py` joins fields by hand, so quoted commas break there as well.")
    helper.save(folder / OLDER / "subagents" / "agent-a3f9c2.jsonl")
    newer = Transcript(str(project), session_id=NEWER)
    newer.prompt("Make the exporter quote fields too")
    newer.edit("src/notes/exporter.py", said="Let me write rows with csv.writer.")
    newer.save(folder / f"{NEWER}.jsonl")
    with (folder / f"{NEWER}.jsonl").open("ab") as handle:
        handle.write(b"{damaged\n")
    os.utime(folder / f"{OLDER}.jsonl", (1, 1))  # older by its time, not by its name
    (folder / "notes.txt").write_text("not a transcript")
    return folder


def test_a_dry_run_writes_nothing(layout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, document = run(capsys, "capture", "--dry-run")
    assert code == 0 and document["dry_run"] is True
    assert document["kept"]["session_insight"] == 2
    assert listed(capsys) == []
    assert not (Path.cwd() / ".dualmem" / "capture").exists() or not any(
        (Path.cwd() / ".dualmem" / "capture").glob("*.json"))


def test_capture_imports_past_sessions_once(layout: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, document = run(capsys, "capture")
    assert code == 0 and document["status"] == "clean"
    sessions = document["sessions"]
    assert isinstance(sessions, list)
    assert [Path(s["transcript"]).name for s in sessions] == [
        f"{OLDER}.jsonl", "agent-a3f9c2.jsonl", f"{NEWER}.jsonl"]
    assert [s["damaged"] for s in sessions] == [0, 0, 1]
    memories = listed(capsys)
    insights = [e for e in memories if e["kind"] == "session_insight"]
    assert len(insights) == 2
    [exporter] = [orjson.loads(e["body"]) for e in memories if e["name"] == "src/notes/exporter.py"]
    assert exporter["changed"] is True and exporter["sessions"] == [OLDER, NEWER]
    assert any("joins fields by hand" in note for note in exporter["notes"])  # the subagent's
    # A second run reads nothing new and writes nothing.
    code, again = run(capsys, "capture")
    assert code == 0 and again["kept"] == {}
    assert listed(capsys) == memories


def test_what_cannot_be_read_is_skipped_and_said(layout: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(layout / "3c3c3c3c-0000-4000-8000-000000000003.jsonl")
    code, document = run(capsys, "capture")
    assert code == PARTIAL_EXIT and document["status"] == "partial"
    skipped = [s for s in document["sessions"] if s["skipped"]]
    assert len(skipped) == 1 and "not a regular file" in skipped[0]["skipped"]
    assert len([e for e in listed(capsys) if e["kind"] == "session_insight"]) == 2


def test_no_transcripts_for_the_project_is_one_line(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert main(["--backend", "file", "init"]) == 0
    capsys.readouterr()
    assert main(["--backend", "file", "capture"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Claude Code transcripts" in err


def test_a_transcript_past_one_reads_budget_is_read_to_its_end(
        layout: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from memory.capture import reading

    # A read of 2,000 bytes: each transcript takes several.
    monkeypatch.setattr(reading.Budget.__init__, "__defaults__", (2000, 8 * 2**20, None))
    code, document = run(capsys, "capture")
    assert code == 0
    sessions = document["sessions"]
    assert isinstance(sessions, list) and [s["damaged"] for s in sessions] == [0, 0, 1]
    code, again = run(capsys, "capture")
    assert again["kept"] == {} and all(s["lines"] == 0 for s in again["sessions"])
