"""A pid is alive while its process runs: not once it has exited, reaped or not."""

from __future__ import annotations

import subprocess
import sys
import time

from backends.processes import alive


def test_a_running_process_is_alive_and_an_exited_one_is_not_even_unreaped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        assert alive(child.pid)
    finally:
        assert child.stdin is not None
        child.stdin.close()
    deadline = time.monotonic() + 120
    # Not reaped (no wait yet): a zombie, which kill(pid, 0) alone takes for a live process.
    while alive(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child.pid)
    assert child.wait() == 0
    assert not alive(child.pid)
