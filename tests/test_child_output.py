"""A short command's output, read without ``subprocess``: what it printed when it exited 0 in
time, else None, with nothing left running."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from backends.child_output import output
from backends.processes import alive


def test_what_a_command_prints_is_read_whole_and_its_stderr_and_stdin_are_not_its() -> None:
    big = 1 << 20  # far over a pipe's buffer: read as it is written, not after it exits
    script = ("import sys; sys.stderr.write('noise'); sys.stdout.write(sys.stdin.read());"
              f"sys.stdout.write('x' * {big})")
    assert output([sys.executable, "-c", script], timeout=60) == b"x" * big


def test_a_command_that_fails_or_cannot_start_gives_none() -> None:
    assert output([sys.executable, "-c", "print('half'); raise SystemExit(3)"], timeout=60) is None
    assert output(["dualmem-no-such-command"], timeout=60) is None
    assert output([os.devnull], timeout=60) is None  # not a program


@pytest.mark.parametrize("then", ["", "os.close(1);"], ids=["running", "stdout-closed"])
def test_a_command_past_its_time_is_killed(tmp_path: Path, then: str) -> None:
    # Running on, or on after closing its stdout (whose end alone is no exit).
    pid_file = tmp_path / "pid"
    script = (f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid()));"
              f"{then} time.sleep(60)")
    assert output([sys.executable, "-c", script], timeout=3) is None
    assert not alive(int(pid_file.read_text()))
