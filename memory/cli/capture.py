"""``dualmem capture [PATH ...]``: past Claude Code sessions into memory (``memory.capture``).

Without a path, the project's own transcripts in Claude Code's folder. Each transcript is read
from where the last capture (a hook's, or this command's) stopped, so a second run writes
nothing. ``--dry-run`` reads and says what would be written, writing nothing (not even the
cursors)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from backends.protocol import MemoryBackend
from memory.capture.backfill import NoTranscripts, claude_folder, transcripts
from memory.capture.hook import problems, project_folder
from memory.capture.kept import Kept
from memory.capture.run import Report, capture_transcript
from memory.cli.base import Command
from memory.cli.progress import Progress
from memory.output import PARTIAL_EXIT, Output
from memory.store.config import Config
from memory.store.home import require_home
from memory.store.project import project_id
from memory.store.selection import open_backend


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                        help="transcripts (.jsonl) or folders of them (default: this project's "
                        "folder in ~/.claude/projects/, subagents included)")
    parser.add_argument("--dry-run", action="store_true",
                        help="say what would be kept, write nothing")


async def capture(args: argparse.Namespace, config: Config) -> Output:
    require_home(config.home)
    root = Path(project_folder(config.home, Path.cwd()))
    paths = args.paths or [claude_folder(root, Path.home())]
    if not args.paths and not paths[0].is_dir():
        raise NoTranscripts(f"no Claude Code transcripts for {root} in {paths[0]}; name them")
    found = transcripts(paths)
    project = project_id(config.home)
    opened: list[MemoryBackend] = []

    async def store() -> MemoryBackend:
        if not opened:
            opened.append((await open_backend(config))[0])
        return opened[0]

    reports: list[Report] = []
    try:
        with Progress("capture", len(found)) as bar:
            for path in found:
                report = await capture_transcript(config.home, project, path, store,
                                                  root=root, final=True, dry_run=args.dry_run)
                # Past the size budget of one read (64 MiB), a transcript is read on to its end.
                while report.left and report.lines and not args.dry_run:
                    more = await capture_transcript(config.home, project, path, store,
                                                    root=root, final=True)
                    report.lines, report.damaged = (report.lines + more.lines,
                                                    report.damaged + more.damaged)
                    report.too_long += more.too_long
                    report.left = more.left
                    report.kept.merge(more.kept)
                reports.append(report)
                bar.advance()
    finally:
        if opened:
            await opened[0].aclose()
    return _output(reports, dry_run=args.dry_run)


def _output(reports: list[Report], *, dry_run: bool) -> Output:
    total = Kept()
    sessions: list[dict[str, Any]] = []
    lines = []
    for report in reports:
        kept = Kept(dict(report.kept.kinds), list(report.kept.refused))
        for episode in report.would_write:
            kept.add(episode.kind)
        total.merge(kept)
        sessions.append({"transcript": report.transcript, "session_id": report.session_id,
                         "lines": report.lines, "damaged": report.damaged, "kept": kept.kinds,
                         "refused": kept.refused, "skipped": report.skipped,
                         "restarted": report.restarted})
        said = kept.describe() or "nothing new"
        name = Path(report.transcript).name
        lines.append(f"{report.session_id[:8] or '-':8} {name}: {report.lines} lines, "
                     f"{'would keep' if dry_run else 'kept'} {said}")
        lines += [f"    {line}" for line in problems(report)]
    verb = "would keep" if dry_run else "kept"
    lines.append(f"{len(reports)} transcripts, {verb} {total.describe() or 'nothing new'}")
    skipped = any(report.skipped for report in reports)
    return Output({"dry_run": dry_run, "sessions": sessions, "kept": total.kinds,
                   "status": "partial" if skipped else "clean"}, "\n".join(lines),
                  exit_code=PARTIAL_EXIT if skipped else 0)


COMMANDS = {"capture": Command(_arguments, capture)}
