"""A hold that one process at a time has, for the milliseconds of setting up a database in a
folder: ``flock`` on the folder itself, so there is no lock file to create, and the kernel drops
it when its process dies."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

from backends.lean_typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import StrPath


@contextmanager
def flocked(folder: StrPath) -> Iterator[None]:
    descriptor = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # which releases it
