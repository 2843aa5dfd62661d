"""Running a process on a home it cannot write, honestly even as root (root ignores permission
bits, so ``chmod -R a-w`` alone proves nothing there).

Two ways, each used where it works:

- ``mount``: the home bind-mounted read-only in a private mount namespace of the child
  (``unshare``; needs root). The kernel answers EROFS, as for a read-only volume or checkout.
- ``permissions``: ``chmod -R a-w`` on the home; as root, the child runs without the
  capabilities that bypass permission bits (``setpriv``), so the kernel answers EACCES.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

# What the kernel says in each case; dualmem's error must pass it on.
REASONS = {"mount": "Read-only file system", "permissions": "Permission denied"}
_BIND_READ_ONLY = (
    'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" && shift && exec "$@"'
)
_BYPASS = "-dac_override,-dac_read_search,-fowner,-linux_immutable"


@cache
def modes() -> tuple[str, ...]:
    """The ways that work on this machine (at least one, or the suite cannot be honest here)."""
    found = []
    root = os.geteuid() == 0
    if root and shutil.which("unshare") and _can_mount():
        found.append("mount")
    if not root or shutil.which("setpriv"):
        found.append("permissions")
    if not found:
        raise RuntimeError("no honest way to make a folder read-only here: as root, this needs "
                           "unshare (with mount rights) or setpriv")
    return tuple(found)


def _can_mount() -> bool:
    with tempfile.TemporaryDirectory() as folder:
        probe = ["unshare", "--mount", "--propagation", "private", "sh", "-c", _BIND_READ_ONLY,
                 "sh", folder, "true"]
        return subprocess.run(probe, capture_output=True, check=False).returncode == 0


@contextlib.contextmanager
def read_only(mode: str, home: Path) -> Iterator[list[str]]:
    """The prefix of a command line that runs it with ``home`` read-only (restored after)."""
    if mode == "mount":
        yield ["unshare", "--mount", "--propagation", "private", "sh", "-c", _BIND_READ_ONLY,
               "sh", str(home)]
        return
    _chmod(home, writable=False)
    try:
        yield ["setpriv", f"--bounding-set={_BYPASS}"] if os.geteuid() == 0 else []
    finally:
        _chmod(home, writable=True)


def run_read_only(
    mode: str, home: Path, argv: Sequence[str], **options: Any
) -> subprocess.CompletedProcess[str]:
    with read_only(mode, home) as prefix:
        return subprocess.run([*prefix, *argv], capture_output=True, text=True, check=False,
                              **options)


def _chmod(home: Path, *, writable: bool) -> None:
    for folder, _, names in os.walk(home):
        for path in [Path(folder), *(Path(folder) / name for name in names)]:
            mode = path.lstat().st_mode
            path.chmod(mode | 0o200 if writable else mode & ~0o222)
