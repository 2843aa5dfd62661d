"""The working set: the files a session edited and read (its transcript), the git working
tree and branch (a real repository in a temporary folder), and the paths a prompt names."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from memory.workset import git_files, named_files, session_files, working_set


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                    "-c", "commit.gpgsign=false", *args], check=True, capture_output=True)


def _write(root: Path, path: str, text: str = "x\n") -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)


def _counting_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git ahead on PATH that notes each call in the file returned, and runs the real one."""
    calls, folder = tmp_path / "calls", tmp_path / "bin"
    folder.mkdir()
    (folder / "git").write_text(f'#!/bin/sh\necho "$*" >> "{calls}"\n'
                                f'exec "{shutil.which("git")}" "$@"\n')
    (folder / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return calls


def test_the_git_working_tree_and_the_branch_since_its_base(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    for path in ("app/api/refunds.py", "app/services/ledger.py", "README.md", "old.py"):
        _write(root, path)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")
    assert git_files(root) == []  # on the base, nothing changed
    _git(root, "checkout", "-qb", "refund-retries")
    _write(root, "app/services/refunds.py")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "on the branch")
    _write(root, "app/api/refunds.py", "changed\n")  # changed, not staged
    _write(root, "app/services/ledger.py", "staged\n")
    _git(root, "add", "app/services/ledger.py")  # staged
    _git(root, "mv", "old.py", "app/new name.py")  # renamed: the new name counts
    _write(root, "tests/test_refunds.py")  # untracked
    found = git_files(root)
    assert set(found) == {"app/api/refunds.py", "app/services/ledger.py", "app/new name.py",
                          "tests/test_refunds.py", "app/services/refunds.py"}
    assert found[-1] == "app/services/refunds.py"  # the branch's own changes come last
    assert set(git_files(root / "app")) == {  # relative to a sub-folder, none outside it
        "api/refunds.py", "services/ledger.py", "new name.py", "services/refunds.py"}
    assert git_files(tmp_path / "nowhere") == []


def test_the_branch_left_the_remotes_default_asking_git_four_times_at_most(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each git process costs a prompt hook milliseconds of CPU: they are counted.
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "master")
    _write(root, "a.py")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")
    _git(root, "update-ref", "refs/remotes/origin/trunk", "HEAD")
    _git(root, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")
    _git(root, "checkout", "-qb", "work")
    _write(root, "b.py")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "on the branch")
    _write(root, "c.py")
    calls = _counting_git(tmp_path, monkeypatch)
    assert git_files(root) == ["c.py", "b.py"]
    assert len(calls.read_text().splitlines()) <= 4


def test_outside_any_repository_git_is_not_asked_unless_git_dir_names_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GIT_DIR", raising=False)
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _write(repo, "a.py")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "start")
    _write(outside, "b.py")
    calls = _counting_git(tmp_path, monkeypatch)
    assert git_files(outside) == []
    assert not calls.exists()  # no .git here nor above: git would have found none
    _git(repo, "worktree", "add", "-q", str(tmp_path / "tree"), "-b", "side")
    _write(tmp_path / "tree", "c.py")
    assert git_files(tmp_path / "tree" / ".") == ["c.py"]  # a worktree: a .git file
    link = tmp_path / "link"
    link.symlink_to(repo / "sub")
    _write(repo, "sub/d.py")
    assert git_files(link) == ["d.py"]  # git looks from the folder the link names
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    # The repository GIT_DIR names, with this folder as its tree: a.py gone, b.py new.
    assert set(git_files(outside)) == {"a.py", "b.py"}


def test_the_files_a_session_edited_then_read(tmp_path: Path) -> None:
    root = tmp_path / "project"
    lines = []
    for n, (tool, path) in enumerate([("Read", "app/a.py"), ("Edit", "app/b.py"),
                                      ("Read", "/elsewhere/c.py"), ("Write", "app/d.py")]):
        lines.append({"type": "assistant", "uuid": f"u{n}", "cwd": str(root), "message": {
            "content": [{"type": "tool_use", "id": f"t{n}", "name": tool,
                         "input": {"file_path": str(root / path) if path[0] != "/" else path}}]}})
        lines.append({"type": "user", "uuid": f"r{n}", "cwd": str(root), "message": {
            "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "ok"}]}})
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    assert session_files(transcript, root) == ["app/d.py", "app/b.py", "app/a.py"]
    assert session_files(tmp_path / "missing.jsonl", root) == []


def test_the_paths_a_prompt_names_join_the_rest_once(tmp_path: Path) -> None:
    assert named_files("Fix app/api/refunds.py and `memory.hooks`, then run it") == [
        "app/api/refunds.py", "memory.hooks"]
    assert working_set(tmp_path, given=["./app/x.py", "app/x.py"],
                       prompt="see app/x.py and app/y.py", git=False) == ["app/x.py", "app/y.py"]
