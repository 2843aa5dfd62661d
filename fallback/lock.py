"""The file layer's cross-process writer lock: ``flock`` on one file, its descriptor kept open.

The lock used before (filelock) opened and truncated the lock file on every attempt, with
about 0.2 ms of bookkeeping per try: writers polling each millisecond behind the holder burnt
most of a core between them, and every open and close woke every watcher of the home. Here a
try is one ``flock`` call on a descriptor opened once. The kernel drops the lock of a process
that dies, so a killed writer never blocks the others.

The kernel does not say that a holder died, which matters: a writer killed between its renames
and its index's commit leaves files no index has read. So each holder marks the lock file's first
byte while it holds the lock and clears it on release; the next holder finds the mark of one that
died (``holder_died``), and says when it has made good what that one may have left
(``recovered``).
"""

from __future__ import annotations

import _thread
import fcntl
import os
import time

from backends.lean_typing import TYPE_CHECKING
from backends.safe_files import open_for_write

if TYPE_CHECKING:
    from _typeshed import StrPath

LOCK_TIMEOUT = 20.0
# Writes hold the lock for about a millisecond; the default 50 ms poll would idle most waits.
LOCK_POLL = 0.001
_HELD, _FREE = b"1", b"0"


class FolderLock:
    """Exclusive across processes and across the threads of one process; re-entrant within
    a thread."""

    def __init__(self, path: StrPath, *, timeout: float, poll: float) -> None:
        self.path = path
        self._timeout = timeout
        self._poll = poll
        self._fd: int | None = None
        # threading.RLock() makes this same lock; importing threading costs a Stop ~4M instructions
        self._threads = _thread.RLock()
        self._depth = 0
        self.holder_died = False
        """the last holder died holding the lock, and this holder has yet to recover from it"""

    def acquire(self, *, wait: bool = True) -> bool:
        """Hold the lock; False when another holds it past the timeout (at once without
        ``wait``). ``OSError`` when its file cannot be opened (a read-only home),
        ``FileRefused`` when it is a symbolic link (a write through it could create a file
        anywhere)."""
        deadline = time.monotonic() + (self._timeout if wait else 0.0)
        if not self._threads.acquire(timeout=self._timeout if wait else 0.0):
            return False
        try:
            if self._depth == 0 and not self._flock(deadline):
                self._threads.release()
                return False
        except BaseException:
            self._threads.release()
            raise
        self._depth += 1
        return True

    def recovered(self) -> None:
        """This holder has made good what a holder that died may have left."""
        self.holder_died = False

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            if not self.holder_died:  # else the next holder learns it in turn
                self._mark(_FREE)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._threads.release()

    def close(self) -> None:
        """Close the lock's file (releasing the lock should a thread still hold it)."""
        with self._threads:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _flock(self, deadline: float) -> bool:
        if self._fd is None:
            self._fd = open_for_write(self.path, os.O_RDWR | os.O_CREAT)
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.holder_died = os.pread(self._fd, 1, 0) == _HELD
                self._mark(_HELD)
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
            time.sleep(self._poll)

    def _mark(self, state: bytes) -> None:
        assert self._fd is not None
        # Best effort, no sync: the mark only has to outlive a process (the page cache does);
        # after a power cut, the first open finds every folder the dead writer renamed into moved.
        # A full disk may refuse the byte of a lock file made empty by an older dualmem.
        try:  # noqa: SIM105 (contextlib's import costs a lean Stop ~3M instructions)
            os.pwrite(self._fd, state, 0)
        except OSError:
            pass
