"""``dualmem``'s entry point: a capturing hook with nothing new to read or a later Stop it can
write lean (``memory.capture.quick``) and a tool call the journal's index answers
(``memory.tool_quick``) are answered before the command line is imported; everything else runs
``memory.cli``."""

from __future__ import annotations

import os
import sys


def main() -> int:
    import gc

    # A quick answer is its process's whole life (~0.1 s): the collector's passes over what its
    # imports made cost a later Stop ~6M instructions (a twentieth) and free nothing reference
    # counting leaves. Nothing there waits on the collector: each descriptor, lock and index
    # connection it opens is closed in a ``finally``, and it starts no thread; the interpreter
    # still collects once at exit. The whole way (a server runs for hours) has it on.
    gc.disable()
    from memory.capture.quick import answer

    argv, env = sys.argv[1:], dict(os.environ)
    said = answer(argv, sys.stdin.buffer.read, env)
    if said is None:
        from memory.tool_quick import quick_answer  # a capture needs none of it

        said = quick_answer(argv, sys.stdin.buffer.read, env)
    if said is not None:
        print(said)
        return 0
    gc.enable()
    from memory.cli import main as whole

    return whole()
