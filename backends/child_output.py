"""What a short command printed, without the ``subprocess`` module, whose import (``threading``,
``selectors``, ``signal``'s enums) costs a one-shot hook ~22M instructions: more than a later
Stop's whole work. A Stop in a git repository asks git for the session's commits this way;
anything that needs more than stdout and a time bound uses ``subprocess``."""

from __future__ import annotations

import os
import select
import time

from backends.lean_typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

_SIGKILL = 9  # POSIX fixes its number; ``signal``'s import builds enums


def output(argv: Sequence[str], *, timeout: float) -> bytes | None:
    """What ``argv`` (looked up on PATH) wrote on stdout, when it started and exited 0 within
    ``timeout`` seconds; None otherwise, and a command still running then is killed. Its stdin
    and stderr are the null device."""
    read_end, write_end = os.pipe()  # neither is inherited: stdout is a copy (dup2)
    try:
        pid = os.posix_spawnp(argv[0], list(argv), os.environ, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, write_end, 1),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])
    except OSError:
        os.close(read_end)
        return None
    finally:
        os.close(write_end)
    deadline = time.monotonic() + timeout
    try:
        printed = _read_until_closed(read_end, deadline)
    finally:
        os.close(read_end)
    code = _exit_code(pid, deadline)
    return printed if code == 0 and printed is not None else None


def _read_until_closed(fd: int, deadline: float) -> bytes | None:
    """Everything read from ``fd`` until its writer closed it; None at ``deadline``."""
    ready = select.poll()
    ready.register(fd, select.POLLIN)
    chunks: list[bytes] = []
    while (left := deadline - time.monotonic()) > 0:
        if ready.poll(left * 1000):
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    return None


def _exit_code(pid: int, deadline: float) -> int | None:
    """``pid``'s exit code once it exits, reaped; None (killed and reaped) at ``deadline``."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= deadline:
            break
        time.sleep(0.001)
    os.kill(pid, _SIGKILL)
    os.waitpid(pid, 0)
    return None
