"""How long reading an Auto-Claude ``gotchas.md`` takes when one bullet has many continuation
lines (a figure, not a test). Appending each line to the item's text made it quadratic: 300k
lines (14 MB) took over a minute; joined once, it is linear.

    python -m bench.auto_claude_markdown [LINES ...]
"""

from __future__ import annotations

import sys
import time

from memory.importers.auto_claude_markdown import markdown_items

DEFAULT_LINES = (10_000, 100_000, 300_000)


def gotchas(lines: int) -> str:
    """A file of one bullet continued over ``lines`` indented lines."""
    return "# Gotchas\n\n- the first line of a long bullet\n" + "".join(
        f"  continuation line {n:07d} of the same bullet\n" for n in range(lines))


def main(sizes: tuple[int, ...] = DEFAULT_LINES) -> None:
    for lines in sizes:
        text = gotchas(lines)
        started = time.perf_counter()
        items = markdown_items(text)
        seconds = time.perf_counter() - started
        assert len(items) == 1
        print(f"auto-claude gotchas.md, one bullet of {lines:,} lines ({len(text) / 1e6:.1f} MB): "
              f"{seconds:.2f} s")


if __name__ == "__main__":
    main(tuple(int(arg) for arg in sys.argv[1:]) or DEFAULT_LINES)
