"""The working set: the files the work touches, which its words may never name.

Three sources, most telling first:

- the files the session edited, then those it read (Claude Code's transcript, folded by
  capture's ``Session``);
- the git working tree: changed, staged and untracked files, then the files the branch changed
  since it left its base (the remote's default branch, else ``main`` or ``master``);
- the paths and modules the prompt names (``backends.search.entities``).

Paths are relative to the project folder, as the project's memories name them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

MAX_FILES = 20
"""files kept: a session that touched hundreds says most with its latest"""
GIT_SECONDS = 2.0
TRANSCRIPT_BYTES = 4 << 20
"""bytes of a transcript read from its end: its latest work"""
NAMED_LABELS = frozenset({"File", "Module"})


def working_set(
    root: Path,
    *,
    given: Iterable[str] = (),
    transcript: Path | None = None,
    prompt: str = "",
    git: bool = True,
) -> list[str]:
    """The files of the work in ``root``: ``given`` first, then the session's edits and reads,
    the git working tree and branch, and what ``prompt`` names; each once, at most
    ``MAX_FILES``."""
    found = [*given]
    if transcript is not None:
        found += session_files(transcript, root)
    if git:
        found += git_files(root)
    found += named_files(prompt)
    return list(dict.fromkeys(f for f in (_clean(p) for p in found) if f))[:MAX_FILES]


def project_path(path: str, root: Path) -> str:
    """``path`` as the project's memories name it: relative to the project folder ``root``
    (an absolute path under it, or one relative to the current folder)."""
    given = Path(path)
    absolute = given if given.is_absolute() else Path.cwd() / given
    try:
        return absolute.resolve().relative_to(root.resolve()).as_posix() + (
            "/" if path.endswith("/") else "")
    except ValueError:  # outside the project: kept as given
        return path


def _clean(path: str) -> str:
    path = path.strip().removeprefix("./")
    return "" if not path or path.startswith("../") or "\n" in path else path


def named_files(text: str) -> list[str]:
    """The paths and modules ``text`` names (``app/api/refunds.py``, ``memory.hooks``)."""
    # Imported here: its patterns cost the tool hook's quick answer to a Read, which names
    # its file outright.
    from backends.search.text_names import text_entities

    return [name for label, name in text_entities(text) if label in NAMED_LABELS]


def session_files(transcript: Path, root: Path) -> list[str]:
    """The files a session edited (newest last), then those it only read, relative to
    ``root``; none when the transcript cannot be read."""
    from backends.errors import FileRefused
    from backends.safe_files import open_regular
    from memory.capture.session import Session
    from memory.capture.transcript import parse_line

    try:
        fd = open_regular(transcript)
    except (FileRefused, OSError):
        return []
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - TRANSCRIPT_BYTES)
        raw = os.pread(fd, size - start, start)
    finally:
        os.close(fd)
    if start:  # the latest work; the first line read may be cut: skipped
        raw = raw.split(b"\n", 1)[-1]
    session = Session(root=str(root))
    for line in raw.splitlines():
        if line.strip():
            session.feed(parse_line(line))
    files = session.files
    edited = [path for path, known in files.items() if known["changed"]]
    read = [path for path, known in files.items() if known["read"] and not known["changed"]]
    return [*edited[::-1], *read[::-1]]


def git_files(root: Path) -> list[str]:
    """Changed, staged and untracked files of the git working tree holding ``root``, then the
    files its branch changed since it left its base; relative to ``root`` (files outside it
    left out). None when ``root`` is in no repository or git is missing. At most four git
    processes: each costs a prompt hook milliseconds of CPU."""
    if not _may_be_in_repository(root):
        return []
    top = _git(root, "rev-parse", "--show-toplevel")
    if not top:
        return []
    status = _git(root, "status", "--porcelain=v1", "-z", "--branch", "--untracked-files=all")
    header, _, status = status.partition("\0")  # "## main...origin/main", "## HEAD (no branch)"
    changed = []
    entries = iter(status.split("\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        changed.append(entry[3:])
        if entry[0] in "RC":  # a rename or copy: its source follows
            next(entries, None)
    base = _base(root, header.removeprefix("## ").split("...")[0])
    branch = _git(root, "diff", "--name-only", "-z", f"{base}...HEAD").split("\0") if base else []
    here = root.resolve()
    kept = []
    for path in [*changed, *branch]:
        if not path:
            continue
        absolute = Path(top) / path
        if absolute.is_relative_to(here):
            kept.append(absolute.relative_to(here).as_posix())
    return list(dict.fromkeys(kept))


def _may_be_in_repository(root: Path) -> bool:
    """Whether git could find a repository from ``root``: a ``.git`` (folder, or a worktree's
    file) in it or a folder above, or ``GIT_DIR`` set. Where none is, git would say so: the
    prompt hook outside a repository starts no process (and imports no ``subprocess``)."""
    if "GIT_DIR" in os.environ:
        return True
    folder = os.path.realpath(root)  # git looks from the physical folder
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


_BASES = ("refs/heads/main", "refs/heads/master", "refs/remotes/origin/main",
          "refs/remotes/origin/master")


def _base(root: Path, head: str) -> str:
    """The branch the work on ``head`` left: the remote's default branch, else ``main`` or
    ``master`` (none when ``head`` is that branch itself); one git process."""
    listed = _git(root, "for-each-ref", "--format=%(refname)%00%(symref)",
                  "refs/remotes/origin/HEAD", *_BASES).splitlines()
    known = dict(line.split("\0") for line in listed)
    remote = known.pop("refs/remotes/origin/HEAD", "")
    for name in (remote, *_BASES):
        if name in known or (name and name == remote):
            short = name.removeprefix("refs/heads/").removeprefix("refs/remotes/")
            return "" if head == short else short
    return ""


def _git(root: Path, *args: str) -> str:
    """What ``git -C root ARGS`` prints; '' when it fails, is missing or takes too long."""
    import subprocess  # here: the tool hook's quick answer needs this module, not git

    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                              timeout=GIT_SECONDS, check=False,
                              env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.decode("utf-8", "replace").rstrip("\n") if done.returncode == 0 else ""
