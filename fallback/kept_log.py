"""What the graph holds and the journal cannot give it again (``backends.graph.history``), kept
beside the journal, one JSON object per line in the file layer's folder: the facts rewrites
retired (``history.jsonl``: the journal holds each memory's latest version only) and what
graphiti's LLM extraction found (``enriched.jsonl``). Without them a graph rebuilt from the
journal (emptied, damaged, its folder deleted) would have lost them for good.

Only the graph's holder writes them, appending what the graph holds and the file lacks. A line
cut short by a crash, or damaged by hand, is skipped with a warning: the graph still has what
it held until it is rebuilt, and the next save writes it again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TypeVar

import orjson

from backends.errors import FileRefused, MigrationError, WriteFailed
from backends.safe_files import open_for_write, read_regular

T = TypeVar("T")
LIMIT = 1 << 30
"""the most of one file that is read: every fact ever retired, a line each, is far less"""


class Line(Protocol):
    def to_json(self) -> dict[str, Any]: ...


def read(path: Path, parse: Callable[[dict[str, Any]], T]) -> list[T]:
    """What the file holds, in order, as ``parse`` reads each line (``MigrationError`` for a
    line it does not take); none when the file does not exist."""
    try:
        data = read_regular(path, limit=LIMIT, follow=False)
    except FileNotFoundError:
        return []
    except (OSError, FileRefused) as exc:  # a link may lead out of the home: never read
        why = exc.reason if isinstance(exc, FileRefused) else exc.strerror
        _warn("%s: unreadable (%s); a rebuilt graph does not get back what it holds",
                    path, why)
        return []
    found: list[T] = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = orjson.loads(line)
            if not isinstance(item, dict):
                raise MigrationError("not an object")
            found.append(parse(item))
        except (orjson.JSONDecodeError, MigrationError) as exc:
            _warn("%s:%d: skipped (%s)", path, number, exc)
    return found


def append(path: Path, items: Iterable[Line]) -> int:
    """Append ``items`` and make them durable; returns how many. ``WriteFailed`` when the disk
    refuses (the graph keeps them meanwhile)."""
    lines = b"".join(orjson.dumps(item.to_json()) + b"\n" for item in items)
    if not lines:
        return 0
    try:
        # Appends, and reads the last byte; never through a link, which could lead anywhere.
        fd = open_for_write(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        with os.fdopen(fd, "a+b") as file:
            if _torn(file):
                file.write(b"\n")  # after a torn line: start a whole one
            file.write(lines)
            file.flush()
            os.fsync(file.fileno())
    except FileRefused as exc:
        raise WriteFailed(f"{path}: not saved: {exc.reason}") from exc
    except OSError as exc:
        raise WriteFailed(f"{path}: not saved: {exc.strerror}") from exc
    return lines.count(b"\n")


def _torn(file: BinaryIO) -> bool:
    """Whether the file ends inside a line (a crash cut its last one short)."""
    size = file.seek(0, os.SEEK_END)
    if not size:
        return False
    file.seek(size - 1)
    return file.read(1) != b"\n"


def _warn(message: str, *args: object) -> None:
    # logging is imported here, not at the top: every store opens this module (versions), and
    # a one-shot search must not pay for a warning it does not give.
    import logging

    logging.getLogger(__name__).warning(message, *args)
