"""Whether a process that left its pid in a file (a lock's holder, a writer) still runs."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether ``pid`` runs. A zombie (exited, not yet reaped by its parent) does not: it holds
    no lock and will write nothing more, and waiting for it to go waits on its parent."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, someone else's (EPERM)
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as status:
            stat = status.read()
    except OSError:
        return False  # no /proc here: what kill says stands
    return stat[stat.rindex(")") + 2:].startswith("Z")  # the state follows "(name) "
