"""The items of Auto-Claude's ``patterns.md`` and ``gotchas.md``, in both of the shapes its
writers leave there:

    - Money amounts are integers in minor units      a bullet (``-``, ``*``, ``+``, ``1.``,
      (continuation lines are indented)              ``- [ ]``): its memory package's writers

    ## [2026-11-23 06:38]                            a dated section: the ``record_gotcha``
    Stripe sends events out of order                 tool; the date is the item's time, an
                                                     ``_Context: ..._`` line its context
    _Context: webhook ordering_

Text before the first ``##`` heading that is not a bullet is the file's preamble, not memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from backends.insights import parse_time

_BULLET = re.compile(r"^\s{0,3}(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(.*\S)\s*$")
_DATED = re.compile(r"\[(\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?)\]")
_CONTEXT = re.compile(r"^_Context:\s*(.*?)\s*_$")


@dataclass(frozen=True)
class MarkdownItem:
    text: str
    when: datetime | None = None
    """the date of the ``## [YYYY-MM-DD HH:MM]`` section it is in (UTC), if any"""
    context: str = ""


def markdown_items(text: str) -> list[MarkdownItem]:
    """Every item of the file, in order (see the module docstring)."""
    items: list[MarkdownItem] = []
    # A bullet's continuation lines, joined once it ends: appending each to the item's text
    # copied the text so far every time (300k lines of a 14 MB file took over a minute).
    continued: list[str] = []
    paragraph: list[str] = []
    context: list[str] = []
    in_section, in_bullet = False, False
    dated: datetime | None = None

    def end_bullet() -> None:
        if continued:
            last = items[-1]
            items[-1] = MarkdownItem(" ".join([last.text, *continued]), last.when)
            continued.clear()

    def flush() -> None:
        end_bullet()
        if paragraph:
            items.append(MarkdownItem("\n".join(paragraph).strip(), dated, " ".join(context)))
        paragraph.clear()
        context.clear()

    for line in text.splitlines():
        stripped = line.strip()
        bullet = _BULLET.match(line)
        noted = _CONTEXT.match(stripped)
        if bullet:
            flush()
            items.append(MarkdownItem(bullet.group(1).strip(), dated))
            in_bullet = True
        elif stripped.startswith("#"):
            flush()
            in_section, in_bullet = stripped.startswith("##"), False
            stamp = _DATED.search(stripped)
            dated = parse_time(stamp.group(1)) if stamp else None
        elif not stripped:
            end_bullet()
            in_bullet = False
            if paragraph and paragraph[-1]:
                paragraph.append("")
        elif in_bullet and line[:1].isspace():
            continued.append(stripped)
        elif in_section and noted and paragraph:
            context.append(noted.group(1))
        elif in_section:
            end_bullet()
            in_bullet = False
            paragraph.append(stripped)
    flush()
    return items
