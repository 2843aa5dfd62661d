"""Memories as Markdown: one line per memory (shared by the session context, the hooks and the
export), blocks of them within a size limit, and ``export_markdown``, which renders any store as
files a person reads.

    DIR/patterns.md                      every pattern, by group
    DIR/gotchas.md                       every gotcha and failed approach, by group
    DIR/codebase_map.md                  every file discovery, by group
    DIR/sessions/<group>/session_NNN.md  one file per session insight
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from backends.insights import item_text
from backends.protocol import MemoryBackend
from memory.agent.lines import LINE_CHARS as LINE_CHARS
from memory.agent.lines import bounded_markdown as bounded_markdown
from memory.agent.lines import describe as describe
from memory.agent.lines import one_line as _one_line
from memory.agent.scopes import (
    CODEBASE_DISCOVERY,
    FAILED_APPROACH,
    GOTCHA,
    PATTERN,
    SESSION_INSIGHT,
)


def _bullets(items: Iterable[Any], *keys: str) -> list[str]:
    return [f"- {_one_line(item_text(item, *keys))}" for item in items]


def render_session(insight: Mapping[str, Any]) -> str:
    """An Auto-Claude session insight as a Markdown page."""
    number = insight.get("session_number", "?")
    lines = [f"# Session {number}", ""]
    if insight.get("timestamp"):
        lines += [f"*{insight['timestamp']}*", ""]
    discoveries = insight.get("discoveries") or {}
    files = discoveries.get("files_understood") or {}
    if isinstance(files, Mapping):
        files = [f"`{path}`: {item_text(about, 'description', 'purpose')}"
                 for path, about in files.items()]
    sections = [
        ("Subtasks completed", insight.get("subtasks_completed"), ("id", "description")),
        ("Files understood", files, ("path", "file")),
        ("Patterns found", discoveries.get("patterns_found"), ("pattern", "text")),
        ("Gotchas encountered", discoveries.get("gotchas_encountered"), ("gotcha", "text")),
        ("What worked", insight.get("what_worked"), ()),
        ("What failed", insight.get("what_failed"), ()),
        ("Recommendations for the next session",
         insight.get("recommendations_for_next_session"), ()),
    ]
    for heading, items, keys in sections:
        if items:
            lines += [f"## {heading}", "", *_bullets(items, *keys), ""]
    return "\n".join(lines)


_VIEWS = (
    ("patterns.md", "Patterns", (PATTERN,)),
    ("gotchas.md", "Gotchas and failed approaches", (GOTCHA, FAILED_APPROACH)),
    ("codebase_map.md", "Codebase map", (CODEBASE_DISCOVERY,)),
)


async def render_pages(
    store: MemoryBackend, group_ids: Sequence[str] | None = None
) -> dict[str, str]:
    """The Markdown export as ``{relative path: text}`` (see the module docstring)."""
    page_of = {kind: file_name for file_name, _, kinds in _VIEWS for kind in kinds}
    listed: dict[str, dict[str, list[str]]] = {name: defaultdict(list) for name, *_ in _VIEWS}
    sessions = {}
    # One scan for every page: scan order is global, so each page's lines keep their order.
    async for episode in store.scan(group_ids=group_ids, kinds=[*page_of, SESSION_INSIGHT]):
        if episode.kind in page_of:
            listed[page_of[episode.kind]][episode.group_id].append(f"- {describe(episode)}")
        elif isinstance(data := episode.data, dict):
            number = data.get("session_number")
            stem = f"session_{number:03d}" if isinstance(number, int) else episode.id
            sessions[f"sessions/{episode.group_id}/{stem}.md"] = render_session(data)
    pages = {}
    for file_name, heading, _ in _VIEWS:
        by_group = listed[file_name]
        lines = [f"# {heading}", ""]
        for group in sorted(by_group):
            lines += [f"## {group}", "", *by_group[group], ""]
        pages[file_name] = "\n".join(lines)
    pages.update(sessions)
    return pages


def write_pages(folder: Path, pages: Mapping[str, str]) -> None:
    for relative, text in pages.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


async def export_markdown(
    store: MemoryBackend, folder: Path, *, group_ids: Sequence[str] | None = None
) -> list[str]:
    """Render the store's patterns, gotchas, codebase map and sessions (of the given groups;
    default all) as Markdown under ``folder``, whichever layer holds them; returns the files
    written (relative paths). Rewrites those files and touches nothing else in ``folder``."""
    import asyncio  # here: the prompt hook imports this module and runs without a loop

    pages = await render_pages(store, group_ids)
    await asyncio.to_thread(write_pages, folder, pages)
    return sorted(pages)
