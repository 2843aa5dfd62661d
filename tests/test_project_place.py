"""A home records where it was made (its project's folder and git remote): ``init`` and
``status`` say when a home was moved or copied, without refusing it, and ``init --new-id`` gives
a copied home an id of its own. A clone of the same repository is the same project."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from memory.cli import main
from memory.store.project import read_project


def dualmem(capsys: pytest.CaptureFixture[str], project: Path, *argv: str) -> Any:
    code = main(["--home", str(project / ".dualmem"), "--backend", "file", *argv, "--json"])
    document = orjson.loads(capsys.readouterr().out)
    assert code == 0, document
    return document


def git(folder: Path, *argv: str) -> None:
    subprocess.run(["git", "-C", str(folder), *argv], check=True, capture_output=True)


def repository(folder: Path, remote: str) -> Path:
    folder.mkdir(parents=True)
    git(folder, "init", "-q")
    git(folder, "remote", "add", "origin", remote)
    return folder


def test_a_copied_home_is_noticed_and_can_take_an_id_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    made = dualmem(capsys, first, "init")
    assert made["notice"] is None
    shutil.copytree(first / ".dualmem", second / ".dualmem")

    status = dualmem(capsys, second, "status")
    said = status["project_notice"]
    assert f"recorded in {first}; this home is in {second}" in said
    assert "dualmem init --new-id" in said and "dualmem init`" in said
    assert "project_notice" not in dualmem(capsys, first, "status")

    again = dualmem(capsys, second, "init")  # said, not refused; the place is recorded
    assert again["project_id"] == made["project_id"] and "dualmem init --new-id" in again["notice"]
    assert "project_notice" not in dualmem(capsys, second, "status")

    renewed = dualmem(capsys, second, "init", "--new-id")
    assert renewed["previous_id"] == made["project_id"]
    assert renewed["project_id"] not in (made["project_id"], None)
    assert renewed["project_id"].startswith("second-")
    assert dualmem(capsys, first, "init")["project_id"] == made["project_id"]


def test_a_clone_with_a_committed_project_file_is_the_same_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    origin = repository(tmp_path / "origin", "git@example.com:team/app.git")
    made = dualmem(capsys, origin, "init")
    git(origin, "add", ".dualmem/project.json")
    git(origin, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "memory")
    clone = tmp_path / "elsewhere" / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "remote", "set-url", "origin", "https://someone:token@example.com/team/app")
    committed = (clone / ".dualmem" / "project.json").read_bytes()

    assert "project_notice" not in dualmem(capsys, clone, "status")
    found = dualmem(capsys, clone, "init")
    assert (found["project_id"], found["notice"]) == (made["project_id"], None)
    assert (clone / ".dualmem" / "project.json").read_bytes() == committed  # nothing to commit
    assert b"token" not in committed and b"example.com/team/app" in committed


def test_a_home_copied_into_another_repository_is_noticed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = repository(tmp_path / "app", "git@example.com:team/app.git")
    dualmem(capsys, app, "init")
    other = repository(tmp_path / "other", "git@example.com:team/other.git")
    shutil.copytree(app / ".dualmem", other / ".dualmem")
    said = dualmem(capsys, other, "status")["project_notice"]
    assert "git remote example.com/team/app; the project here has example.com/team/other" in said


def test_a_project_file_written_before_places_were_recorded_reads_and_gains_its_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "old" / ".dualmem"
    home.mkdir(parents=True)
    (home / "project.json").write_bytes(b'{"project_id": "old-12345678"}\n')
    assert "project_notice" not in dualmem(capsys, home.parent, "status")
    assert dualmem(capsys, home.parent, "list")["count"] == 0
    found = dualmem(capsys, home.parent, "init")
    assert (found["project_id"], found["notice"]) == ("old-12345678", None)
    record = read_project(home / "project.json")
    assert record is not None and record.place is not None
    assert record.place.folder == str(home.parent)
