"""A later Stop, lean: the transcript gained lines since its cursor, and what they change is
appended to the journal (``fallback.append``) by a process that imports neither the command
line nor the event loop, the store or the journal's index. ``memory.capture.quick`` calls it
before any of those is imported.

It folds only the new lines and derives what the whole way (``capture_transcript``) derives,
with the same steps (``fold``, ``laid_over``), under the same capture lock; it writes and moves
the cursors only when every transcript of the session can be written so. Anything else is the
whole way's, which it leaves untouched: a transcript to read from its start, a lesson to keep
(the agent's lessons are written through the agent API), another layer than the journal
(``--backend graph``, a team's server), a home or environment the command line would have to
say something about. A gotcha is appended as any memory is: the catch-up that takes it in
renders its page (``fallback.append``)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping

from backends import json_read
from backends.errors import DualmemError
from backends.lean_typing import TYPE_CHECKING
from backends.model import Episode
from fallback.append import append, stored
from memory.capture.keep import digest, laid_over
from memory.capture.kept import Kept
from memory.capture.reading import CAPTURE_SECONDS, Budget, subagent_transcripts
from memory.capture.run import Folded, capturing, fold, problems
from memory.store.config import FILES, Config
from memory.store.project import project_folder, project_id

if TYPE_CHECKING:
    from typing import Any

    from memory.store.config import ConfigFields


def capture_later(home: str, transcript: str, given: Mapping[str, Any],
                  env: Mapping[str, str], *, backend: str | None, event: str) -> str | None:
    """The hook's output (its JSON document) once what ``transcript`` and its subagents'
    transcripts gained is written; None, with nothing written, for the whole way (module
    docstring). What was skipped or left is said on stderr, as the whole way says it. The
    paths are plain (``quick.plain``): taken as text, no ``pathlib``."""
    cwd = given.get("cwd")
    try:
        config = Config.fields_from_env(env, home=home, backend=backend,
                                        cwd=cwd if isinstance(cwd, str) and cwd else None)
    except DualmemError:  # the whole way says what is wrong
        return None
    if config["backend"] not in ("file", "auto") or (
            config["backend"] == "auto" and config["graph_url"] is not None):
        return None
    try:
        kept = _capture(config, transcript, given, event)
    # A write the journal refused, or anything else: the whole way writes the same again (what
    # was written here is the same memory), or says on stderr what is wrong, and exits 0.
    except Exception:
        return None
    if kept is None:
        return None
    said = kept.describe()
    return json_read.dumps({"systemMessage": f"dualmem kept {said}"} if said else {})


def _capture(config: ConfigFields, transcript: str, given: Mapping[str, Any], event: str
             ) -> Kept | None:
    home = config["home"]
    project = project_id(home)
    cwd = given.get("cwd")
    root = project_folder(home, cwd if isinstance(cwd, str) and cwd else None)
    message = given.get("last_assistant_message")
    deadline = time.monotonic() + CAPTURE_SECONDS
    with capturing(home):
        folded = []
        for path in [transcript, *subagent_transcripts(transcript)]:
            one = fold(home, project, path, root=root, budget=Budget(deadline=deadline),
                       last_message=message if path == transcript else None,
                       appended_only=True)
            if one is None or one.report.skipped or one.lessons:
                return None
            folded.append(one)
        kept = Kept()
        for one in folded:
            if one.session is not None:
                one.report.kept = _append(config, one)
                one.save(home)
            kept.merge(one.report.kept)
            for line in problems(one.report):
                print(f"dualmem hook {event}: {line}", file=sys.stderr)
    return kept


def _append(config: ConfigFields, folded: Folded) -> Kept:
    """``keep`` of the whole way for derived memories, into the journal's files."""
    files = os.path.join(config["home"], FILES)
    changed: list[Episode] = []
    for episode in folded.fresh:
        laid = laid_over(stored(files, episode.group_id, episode.id), episode)
        if laid is not None:
            changed.append(laid)
    append(files, changed, config["max_body_bytes"])
    folded.cursor.written.update((episode.id, digest(episode)) for episode in folded.fresh)
    kept = Kept()
    for episode in changed:
        kept.add(episode.kind)
    return kept
