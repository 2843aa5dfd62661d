"""The graph's history kept beside the journal: the facts rewrites retired
(``backends.graph.history.RetiredFact``), one JSON object per line in ``history.jsonl`` of the
file layer's folder. The journal holds each memory's latest version only, so without this a
graph rebuilt from it (emptied, damaged, its folder deleted) would have lost them for good.

Only the graph's holder writes it, appending what the graph retired and the file lacks. A line
cut short by a crash, or damaged by hand, is skipped with a warning: the graph still has those
facts until it is rebuilt, and the next save writes them again.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

import orjson

from backends.errors import MigrationError, WriteFailed
from backends.graph.history import RetiredFact

log = logging.getLogger(__name__)


def read(path: Path) -> list[RetiredFact]:
    """The facts the file holds, once each (by uuid); none when it does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        log.warning("%s: unreadable (%s); the graph's history is not restored from it", path,
                    exc.strerror)
        return []
    found: dict[str, RetiredFact] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = orjson.loads(line)
            if not isinstance(item, dict):
                raise MigrationError("not an object")
            fact = RetiredFact.from_json(item)
        except (orjson.JSONDecodeError, MigrationError) as exc:
            log.warning("%s:%d: skipped, not a retired fact (%s)", path, number, exc)
            continue
        found.setdefault(fact.uuid, fact)
    return list(found.values())


def append(path: Path, facts: Iterable[RetiredFact]) -> int:
    """Append ``facts`` and make them durable; returns how many. ``WriteFailed`` when the disk
    refuses (the graph keeps them meanwhile)."""
    lines = b"".join(orjson.dumps(fact.to_json()) + b"\n" for fact in facts)
    if not lines:
        return 0
    try:
        with path.open("ab") as file:
            if file.tell() and not _ends_a_line(path):
                file.write(b"\n")  # after a torn line: start a whole one
            file.write(lines)
            file.flush()
            os.fsync(file.fileno())
    except OSError as exc:
        raise WriteFailed(f"{path}: the graph's history was not saved: {exc.strerror}") from exc
    return lines.count(b"\n")


def _ends_a_line(path: Path) -> bool:
    with path.open("rb") as file:
        file.seek(-1, os.SEEK_END)
        return file.read(1) == b"\n"
