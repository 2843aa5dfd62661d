"""One line per memory and blocks of them within a size limit: what the session context, the
hooks and the export show of a memory. Apart from ``markdown`` (which renders whole stores) so
that the tool hook's quick answer shows memories read straight from the journal's index
without importing the model or the store."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from backends.kinds import ADR, CODEBASE_DISCOVERY, FAILED_APPROACH, GOTCHA, PATTERN
from backends.texts import item_text


class Shown(Protocol):
    """What ``describe`` reads of a memory: an ``Episode``, or a record read from the index."""

    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def data(self) -> Any: ...


def one_line(text: str) -> str:
    return " ".join(text.split())


def describe(episode: Shown) -> str:
    """One line saying what a memory holds, without its bookkeeping."""
    data = episode.data
    if not isinstance(data, dict):
        return one_line(episode.body) or episode.name
    if episode.kind in (PATTERN, GOTCHA):
        return one_line(item_text(data, episode.kind, "text", "description"))
    if episode.kind == CODEBASE_DISCOVERY:
        detail = item_text({k: v for k, v in data.items() if k != "file"}, "description", "purpose")
        return one_line(f"`{data.get('file', episode.name)}`: {detail}")
    if episode.kind == FAILED_APPROACH:
        text = f"{data.get('approach')}: {data.get('symptom')}"
        if data.get("prevention"):
            text += f"; prevent: {data['prevention']}"
        return one_line(f"{text} ({data.get('severity')}, seen {data.get('occurrence_count')}x)")
    if episode.kind == ADR:
        return one_line(f"{data.get('adr_id')} {data.get('title')}: {data.get('decision')}")
    if "success" in data and "outcome" in data:
        mark = "succeeded" if data["success"] else "failed"
        return one_line(f"{data.get('task_id') or episode.name} {mark}: {data['outcome']}")
    return one_line(episode.name)


LINE_CHARS = 280
"""A bullet of a bounded block is cut here: one memory must not crowd out the others."""


def bounded_markdown(
    heading: str,
    blocks: Sequence[tuple[str, Sequence[str]]],
    limit: int,
    size: Callable[[str], int] = len,
) -> str:
    """Sections of bullets, in order, cut at whole lines so the text's ``size`` (characters,
    or any measure where a joined text is no larger than its parts) stays within ``limit``;
    empty when not one bullet fits."""
    out = f"## {heading}\n"
    used = size(out)
    if used > limit:
        return ""
    added = False
    for section, lines in blocks:
        header = f"\n### {section}\n"
        for line in lines:
            bullet = f"- {line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + '…'}\n"
            cost = size(header) + size(bullet)
            if used + cost > limit:
                break
            out += header + bullet
            used += cost
            header = ""
            added = True
    return out if added else ""
