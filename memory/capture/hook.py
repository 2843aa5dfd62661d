"""Capture for Claude Code's hooks (Stop, SessionEnd, PreCompact): the session's transcript and
its subagents', within a deadline, into the memory home of the session's project. With an LLM
configured, a SessionEnd that kept something starts its summary in the background."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from backends.kinds import SESSION_INSIGHT
from backends.protocol import MemoryBackend
from memory.capture.kept import Kept
from memory.capture.reading import Budget, subagent_transcripts
from memory.capture.run import capture_transcript
from memory.capture.run import problems as problems
from memory.store.config import Config
from memory.store.project import project_folder as project_folder
from memory.store.project import project_id


async def capture_session(
    config: Config, transcript: Path, *, cwd: Path | None, final: bool, deadline: float,
    last_message: str | None = None, warn: Callable[[str], None] = lambda line: None,
) -> str:
    """Capture ``transcript`` and its subagents' transcripts; returns the line saying what was
    kept ('' when nothing new). What could not be read or kept is told to ``warn``."""
    project = project_id(config.home)
    root = project_folder(config.home, cwd)
    opened: list[MemoryBackend] = []

    async def store() -> MemoryBackend:
        if not opened:
            from memory.store.selection import open_backend

            # A hook never waits for the graph, nor keeps a long-running holder out of it.
            opened.append((await open_backend(config, one_shot=True))[0])
        return opened[0]

    kept = Kept()
    try:
        for path in [transcript, *map(Path, subagent_transcripts(transcript))]:
            report = await capture_transcript(
                config.home, project, path, store, root=root, final=final,
                budget=Budget(deadline=deadline),
                last_message=last_message if path == transcript else None)
            kept.merge(report.kept)
            for line in problems(report):
                warn(line)
    finally:
        if opened:
            await opened[0].aclose()
    if final and config.llm is not None and kept.kinds.get(SESSION_INSIGHT):
        summarise_later(config)
    said = kept.describe()
    return f"dualmem kept {said}" if said else ""


async def capture_reply(config: Config, reply: str) -> str:
    """The lessons of a Stop's reply when the hook was given no transcript (a client that sends
    only ``last_assistant_message``); the line saying what was kept."""
    from memory.capture.keep import keep
    from memory.capture.lessons import Lessons
    from memory.store.selection import open_backend

    lessons = Lessons()
    lessons.read(reply)
    if not lessons:
        return ""
    store = (await open_backend(config, one_shot=True))[0]
    try:
        kept = await keep(store, project_id(config.home), [], lessons, {})
    finally:
        await store.aclose()
    said = kept.describe()
    return f"dualmem kept {said}" if said else ""


def summarise_later(config: Config) -> None:
    """Start ``dualmem enrich`` on the home, detached: the LLM's summary of the session (and
    its extraction) is made after the session, never in its way. Its key stays in the
    environment the process inherits."""
    assert config.llm is not None
    llm = config.llm.model + (f"@{config.llm.url}" if config.llm.url else "")
    subprocess.Popen(
        [sys.executable, "-m", "memory", "--home", str(config.home), "--llm", llm, "enrich"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
