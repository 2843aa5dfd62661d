"""Capture one transcript: read what it gained since its cursor, fold it into its session,
derive the memories, write what changed, move the cursor. The store is opened only when there is
something to write, so a Stop with nothing new costs a stat, a small read and a cursor's load.

One capture at a time per home (``flock`` on ``<home>/capture``): a Stop and a SessionEnd of the
same session never fold the same lines twice."""

from __future__ import annotations

import os
import time

from backends.errors import FileRefused
from backends.flock import flocked
from backends.lean_typing import TYPE_CHECKING
from backends.model import Episode
from fallback.disk import make_folder
from memory.agent.scopes import project_group
from memory.capture import cursor as cursors
from memory.capture.kept import Kept
from memory.capture.lessons import Lessons
from memory.capture.reading import Budget, Chunk, read_new
from memory.capture.session import Seen, Session
from memory.capture.transcript import parse_line

if TYPE_CHECKING:  # the protocol's import costs a lean Stop (``later``), which opens no store
    from collections.abc import Awaitable, Callable

    from _typeshed import StrPath

    from backends.protocol import MemoryBackend

    StoreGetter = Callable[[], Awaitable[MemoryBackend]]

_DEADLINE_EVERY = 256  # lines folded between looks at the clock
_LEAN_BYTES = 1 << 20
"""new bytes below which lines are parsed without orjson (``parse_line``): its import costs a
later Stop a quarter of its time, and pays for itself only over a first Stop's megabytes"""


class Report:
    """What capturing one transcript did."""

    def __init__(self, transcript: str) -> None:
        self.transcript = transcript
        self.session_id = ""
        self.lines = 0
        self.damaged = 0
        self.kept = Kept()
        self.would_write: list[Episode] = []
        """with ``dry_run``: the memories a capture would write"""
        self.restarted = ""
        self.too_long = 0
        self.left = 0
        self.skipped = ""
        """why the transcript was not read at all (refused, gone)"""
        self.lessons_over = 0


class Folded:
    """A transcript's new lines folded into its session, and what of it is to be written;
    nothing is written, nor the cursor moved, until ``save``."""

    def __init__(self, report: Report, cursor: cursors.Cursor, session: Session | None = None,
                 chunk: Chunk | None = None, end: int = 0, fresh: list[Episode] | None = None,
                 lessons: Lessons | None = None) -> None:
        self.report = report
        self.cursor = cursor
        self.session = session
        """None: nothing new to derive nor a cursor to move (``report`` says why)"""
        self.chunk = chunk
        self.end = end
        self.fresh: list[Episode] = [] if fresh is None else fresh
        """the derived memories that differ from what was last written"""
        self.lessons = Lessons() if lessons is None else lessons
        """the agent's lessons not yet written"""

    def save(self, home: StrPath) -> None:
        """Move the cursor past what was folded (after the memories are written)."""
        assert self.session is not None and self.chunk is not None
        cursor = self.cursor
        cursor.offset, cursor.inode = self.end, self.chunk.inode
        cursor.skipping = self.chunk.skipping and self.end == self.chunk.end
        cursor.session = self.session.to_json()
        cursors.save(home, cursor)


def capturing(home: StrPath) -> flocked:
    """The home's capture lock: one capture at a time folds and writes (module docstring)."""
    folder = os.path.join(home, cursors.FOLDER)
    make_folder(folder)
    return flocked(folder)


async def capture_transcript(
    home: StrPath,
    project_id: str,
    transcript: StrPath,
    store: StoreGetter,
    *,
    root: StrPath,
    final: bool = False,
    budget: Budget | None = None,
    dry_run: bool = False,
    last_message: str | None = None,
) -> Report:
    """Capture ``transcript`` into the project's memory (see the module docstring). ``root`` is
    the project's folder; ``final`` says the session is over (a cut last line is read);
    ``last_message`` is the reply a Stop hook was given, read for lessons too. Never raises for
    the transcript's content; a transcript that cannot be read is ``Report.skipped``."""
    with capturing(home):
        folded = fold(home, project_id, transcript, root=root, final=final, budget=budget,
                      last_message=last_message)
        assert folded is not None
        report = folded.report
        if folded.session is None:
            return report
        if dry_run:
            report.would_write = folded.fresh
            report.kept = Kept({"lesson": len(folded.lessons)} if folded.lessons else {})
            return report
        if folded.fresh or folded.lessons:
            from memory.capture.keep import keep

            report.kept = await keep(await store(), project_id, folded.fresh, folded.lessons,
                                     folded.cursor.written)
        folded.save(home)
    return report


def fold(
    home: StrPath,
    project_id: str,
    transcript: StrPath,
    *,
    root: StrPath,
    final: bool = False,
    budget: Budget | None = None,
    last_message: str | None = None,
    appended_only: bool = False,
) -> Folded | None:
    """Read what ``transcript`` gained since its cursor, fold it and derive what is to be
    written (``capture_transcript``'s arguments; called under ``capturing``). With
    ``appended_only``, None when the transcript is to be read from its start (no cursor yet,
    or it was rewritten): nothing is folded then."""
    report = Report(str(transcript))
    cursor = cursors.load(home, transcript)
    session = _session(cursor, root)
    if appended_only and not cursor.offset:
        return None
    seen = Seen(session) if cursor.offset else None  # what was derived from
    try:
        chunk = read_new(transcript, cursor, budget or Budget(), final=final)
    except FileRefused as exc:
        report.skipped = str(exc)
        return Folded(report, cursor)
    except OSError as exc:
        report.skipped = f"{transcript}: {exc.strerror or exc}"
        return Folded(report, cursor)
    if appended_only and chunk.restarted:
        return None
    report.restarted, report.too_long, report.left = chunk.restarted, chunk.too_long, chunk.left
    if chunk.restarted:
        session, seen = Session(root=str(root)), None
        cursor.last_start = cursor.last_end = cursor.first_end = 0
    end = chunk.end
    deadline = budget.deadline if budget else None
    lean = sum(len(line) for _, line in chunk.lines) < _LEAN_BYTES
    for n, (offset, line) in enumerate(chunk.lines):
        if deadline is not None and n % _DEADLINE_EVERY == 0 and time.monotonic() > deadline:
            end, report.left = offset, chunk.size - offset
            break
        entry = parse_line(line, lean=lean)
        session.feed(entry)
        report.lines += 1
        report.damaged += entry is None
        cursor.last_start, cursor.last_end = offset, offset + len(line)
        cursor.last_digest = cursors.line_digest(line)
        cursor.last_uuid = entry.meta.uuid if entry else ""
        if offset == 0:
            cursor.first_end, cursor.first_digest = cursor.last_end, cursor.last_digest
    report.session_id = session.session_id
    told = Lessons()
    told.read(last_message or "")
    if not report.lines and not told and end == cursor.offset:
        return Folded(report, cursor)  # nothing new: no memory to derive, no cursor to move
    lessons = Lessons(**session.lessons)
    lessons.read(last_message or "")
    report.lessons_over = lessons.over
    # Imported here: a Stop with nothing new needs none of them.
    from memory.capture.commits import commits_between
    from memory.capture.derive import derive
    from memory.capture.keep import unwritten

    commits = (commits_between(root, session.started, session.ended)
               if report.lines and not session.subagent else [])
    episodes = derive(session, project_group(project_id), commits, since=seen)
    fresh, fresh_lessons = unwritten(episodes, lessons, cursor.written)
    return Folded(report, cursor, session, chunk, end, fresh, fresh_lessons)


def problems(report: Report) -> list[str]:
    """What a capture skipped or left for later, one line each."""
    lines = []
    if report.skipped:
        lines.append(f"transcript not read: {report.skipped}")
    if report.left:
        lines.append(f"{report.transcript}: {report.left} bytes left for the next capture "
                     "(the time or size budget ran out)")
    if report.too_long:
        lines.append(f"{report.transcript}: lines too long to read, skipped: {report.too_long}")
    if report.damaged:
        lines.append(f"{report.transcript}: damaged lines skipped: {report.damaged}")
    if report.lessons_over:
        lines.append(f"{report.lessons_over} lessons over the session's limit, not kept")
    lines += [f"not kept: {why}" for why in report.kept.refused]
    return lines


def _session(cursor: cursors.Cursor, root: StrPath) -> Session:
    """The session folded so far; a new one, read from the start, when there is none or it is
    of another shape (an older release's)."""
    if cursor.session:
        try:
            return Session.from_json(cursor.session)
        except TypeError:
            pass
    cursor.offset = cursor.last_start = cursor.last_end = cursor.first_end = 0
    cursor.skipping = False
    return Session(root=str(root))
