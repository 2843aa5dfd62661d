"""Room to write, checked before Kùzu is asked to write.

Kùzu 0.11.3 does not survive a write it cannot finish for want of space: when a commit cannot
append to its WAL (a full disk, a file-size limit), the failed transaction is rolled back but the
process's heap is left corrupt, and it aborts or segfaults at the next close or at exit, whatever
is done in between (measured; tests/faults/test_disk_full.py drives it). A memory store must not
take its host process down, so the graph layer refuses a write with ``WriteFailed`` while there
is not clearly room for it, before Kùzu sees it. Not airtight (another process may fill the disk
between the check and the write), but it turns "a full disk" into a named error in practice.

Room is the free space of the database's file system and, under ``RLIMIT_FSIZE``, what the
largest database file may still grow. A write needs its own size several times over (WAL
records, shadow pages, then the checkpoint that copies them into the database file), and room
for the database to grow by its own size: a transaction and a checkpoint rewrite whole column
chunks of the node groups they touch, and were measured to grow a 70 MB database by 67 MB for a
write of 300 KB. Plus a margin. The graph thus stops writing well before a disk is full: the
dual store then keeps writing its journal (the file layer), which needs only the write's size.
"""

from __future__ import annotations

import os
from pathlib import Path

from backends.errors import WriteFailed

try:
    import resource
except ImportError:  # not on Windows: no file-size limit to honour there
    resource = None  # type: ignore[assignment]

MARGIN = 8 << 20
PER_BYTE = 4
CREATE = MARGIN + (2 << 20)
"""room a new database needs: graphiti's schema checkpoints into a ~1.1 MB file, through a
shadow file of the same size"""


def room(directory: Path) -> int:
    """Bytes the database in ``directory`` may still write before a disk or a limit is full."""
    stat = os.statvfs(directory)
    free = stat.f_bavail * stat.f_frsize
    if resource is not None:
        limit, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
        if limit != resource.RLIM_INFINITY:
            free = min(free, limit - max(_sizes(directory).values(), default=0))
    return free


def ensure_room(directory: Path, payload: int) -> None:
    """Raise ``WriteFailed`` unless a write of about ``payload`` bytes clearly fits."""
    footprint = sum(_sizes(directory).values())
    needed = MARGIN + PER_BYTE * payload + footprint
    _check(directory, needed, f"a write of ~{payload} bytes")


def ensure_room_to_create(directory: Path) -> None:
    _check(directory, CREATE, "a new graph database")


def _check(directory: Path, needed: int, what: str) -> None:
    try:
        left = room(directory)
    except OSError as exc:
        raise WriteFailed(f"graph layer: cannot tell the room left in {directory}: "
                          f"{exc.strerror or exc}") from exc
    if left < needed:
        raise WriteFailed(
            f"graph layer: not writing {what}: {max(left, 0)} bytes of room left in "
            f"{directory}, {needed} needed (the disk is full, or a file-size limit is near); "
            "nothing was written"
        )


def _sizes(directory: Path) -> dict[str, int]:
    sizes = {}
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_file(follow_symlinks=False):
                    sizes[entry.name] = entry.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return sizes
