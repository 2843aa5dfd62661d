"""``dualmem``'s entry point: a capturing hook with nothing new to read is answered before the
command line is imported (``memory.capture.quick``); everything else runs ``memory.cli``."""

from __future__ import annotations

import os
import sys


def main() -> int:
    from memory.capture.quick import nothing_new

    if nothing_new(sys.argv[1:], sys.stdin.buffer.read, dict(os.environ)):
        print("{}")
        return 0
    from memory.cli import main as whole

    return whole()
