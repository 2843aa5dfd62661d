"""A hold that one process at a time has, for the milliseconds of setting up a database in a
folder: ``flock`` on the folder itself, so there is no lock file to create, and the kernel drops
it when its process dies."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def flocked(folder: Path) -> Iterator[None]:
    descriptor = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # which releases it
