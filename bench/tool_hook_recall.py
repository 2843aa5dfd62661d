"""Does the PostToolUse hook name what earlier sessions learned of a file when a later session
edits it (issue 30)? Real Claude Code sessions of ``bench/transcripts/`` (entire-cli,
git-sync), replayed in time order: each session is captured into one project's home as its
Stop hooks would; before that, for every file it edits that an earlier session edited, the
hook is asked about the edit as Claude Code would (once, in that session), and counts when its
answer names the file (a memory about it).

    python -m bench.tool_hook_recall [PROJECT ...]

Before this issue nothing answered a tool call: every such file went unnamed (0%).
Target: >= 80%. The hook answers from the journal's index (``memory.tool_hook.indexed_context``,
the quick answer's way); a search for the file (what the hook asks a team's server or the graph
alone) is asked in the same run, in a session of its own.

Whether a PreToolUse variant for edits would say more: PostToolUse answers a file when a tool
touched it, so it speaks before the first change unless that change is the session's first
touch of the file (a ``Write`` or an ``Edit`` with no ``Read`` before it). Those files are
counted: only for them could a PreToolUse answer come sooner.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.capture_quality import EDITS, _records, edited_files, projects, transcript_lines
from memory.capture.hook import capture_session
from memory.store.config import Config
from memory.store.project import project_id
from memory.store.selection import open_backend
from memory.tool_hook import tool_context

PROJECTS = ("entire-cli", "git-sync")


def first_touched_by_an_edit(lines: list[bytes]) -> set[str]:
    """The files whose first touch by a file tool (``Read``, an edit) in a session was an
    edit, as absolute paths."""
    touched: set[str] = set()
    first_edits: set[str] = set()
    for _, record in _records(lines):
        if record.get("type") != "assistant":
            continue
        for block in (record.get("message") or {}).get("content") or []:
            if not (isinstance(block, dict) and block.get("type") == "tool_use"):
                continue
            given = block.get("input") or {}
            path = given.get("file_path") or given.get("notebook_path")
            if isinstance(path, str) and block.get("name") in {*EDITS, "Read"}:
                if path not in touched and block.get("name") in EDITS:
                    first_edits.add(path)
                touched.add(path)
    return first_edits


async def replay(name: str, scratch: Path) -> tuple[int, int, list[str], int, int]:
    """(files named, files asked about, the files left unnamed, those of them first touched
    by an edit, files a search's answer named) for one project."""
    (project,) = projects([name])
    folder = scratch / name
    folder.mkdir()
    await asyncio.to_thread(_init, folder)
    config = Config.from_env(home=folder / ".dualmem", backend="file")
    group = project_id(config.home)
    earlier: set[str] = set()
    named = asked = edited_first = by_search = 0
    missed = []
    for session in project.sessions:
        lines = transcript_lines(session, folder)
        _, edited = edited_files(lines)
        first_edits = first_touched_by_an_edit(lines)
        store = (await open_backend(config, one_shot=True))[0]
        try:
            for path in sorted(edited & earlier):
                said = await tool_context(store, group, config.home, session.id, [path],
                                          journal=config.files_dir)
                searched = await tool_context(store, group, config.home, f"{session.id}-s",
                                              [path])
                asked += 1
                edited_first += any(p == path or p.endswith(f"/{path}") for p in first_edits)
                if _names(said, path):  # a memory that names it
                    named += 1
                else:
                    missed.append(f"{session.id[:8]} {path}")
                by_search += _names(searched, path)
        finally:
            await store.aclose()
        transcript = scratch / f"{session.id}.jsonl"
        transcript.write_bytes(b"".join(lines))
        await capture_session(config, transcript, cwd=folder, final=True,
                              deadline=time.monotonic() + 600)
        earlier |= edited
    return named, asked, missed, edited_first, by_search


def _names(said: str, path: str) -> bool:
    return any(path in line for line in said.splitlines() if line.startswith("- "))


def _init(folder: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "memory", "--backend", "file", "init"],
                          cwd=folder, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode())


async def bench(names: tuple[str, ...]) -> None:
    total_named = total_asked = total_first = total_search = 0
    with tempfile.TemporaryDirectory(prefix="dualmem-bench-tool-recall-") as scratch:
        for name in names:
            named, asked, missed, first, by_search = await replay(name, Path(scratch))
            total_search += by_search
            total_named += named
            total_asked += asked
            total_first += first
            print(f"{name}: PostToolUse named {named}/{asked} files a later session edited "
                  f"that an earlier one edited ({named / max(asked, 1):.0%}); {first} of them "
                  f"first touched by an edit; by a search: {by_search}/{asked}")
            for line in missed:
                print(f"  unnamed: {line}")
    print(f"all: {total_named}/{total_asked} ({total_named / max(total_asked, 1):.0%}); "
          "before this issue: 0 (no hook answered a tool call); target >= 80%; first touched by "
          f"an edit (where a PreToolUse answer would come sooner): {total_first}; by a search: "
          f"{total_search}/{total_asked}")


def main() -> None:
    asyncio.run(bench(tuple(sys.argv[1:]) or PROJECTS))


if __name__ == "__main__":
    main()
