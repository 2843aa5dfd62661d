"""The cursor and the bounds: each read takes only what was appended; a truncated, rewritten or
replaced transcript is read again from the start; special files are refused without waiting;
over-long lines and budgets are skipped or left for later, never held whole."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from backends.errors import FileRefused
from backends.safe_files import MiB
from memory.capture.cursor import Cursor, line_digest
from memory.capture.reading import Budget, Chunk, read_new


def lines(*texts: str) -> bytes:
    return b"".join(f'{{"n": "{text}"}}\n'.encode() for text in texts)


def advance(cursor: Cursor, chunk: Chunk) -> None:
    """Move ``cursor`` past ``chunk`` as capture does."""
    cursor.offset, cursor.inode, cursor.skipping = chunk.end, chunk.inode, chunk.skipping
    if chunk.lines and chunk.lines[0][0] == 0:
        cursor.first_end, cursor.first_digest = len(chunk.lines[0][1]), line_digest(
            chunk.lines[0][1])
    if chunk.lines:
        start, line = chunk.lines[-1]
        cursor.last_start, cursor.last_end = start, start + len(line)
        cursor.last_digest = line_digest(line)


def read(path: Path, cursor: Cursor, **budget: int) -> list[bytes]:
    chunk = read_new(path, cursor, Budget(**budget))
    advance(cursor, chunk)
    return [line for _, line in chunk.lines]


def test_append_reads_only_what_is_new(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines("a", "b"))
    cursor = Cursor(str(path))
    assert read(path, cursor) == [b'{"n": "a"}', b'{"n": "b"}']
    assert read(path, cursor) == []
    with path.open("ab") as handle:
        handle.write(lines("c"))
    assert read(path, cursor) == [b'{"n": "c"}']


def test_a_line_being_written_waits_for_its_end(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines("a") + b'{"n": "b')
    cursor = Cursor(str(path))
    assert read(path, cursor) == [b'{"n": "a"}']
    with path.open("ab") as handle:
        handle.write(b'"}\n')
    assert read(path, cursor) == [b'{"n": "b"}']
    # When the session is over, a cut last line is read as it is (the parser counts it).
    path.write_bytes(lines("a") + b'{"n": "cu')
    assert [line for _, line in read_new(path, Cursor(str(path)), Budget(), final=True).lines
            ] == [b'{"n": "a"}', b'{"n": "cu']


@pytest.mark.parametrize(("change", "why"), [
    (lambda p: p.write_bytes(lines("a")), "truncated"),
    (lambda p: p.write_bytes(lines("x", "b", "c")), "rewritten"),
    (lambda p: p.write_bytes(lines("a", "x", "c")), "rewritten"),
    (lambda p: (p.unlink(), p.write_bytes(lines("a", "b", "c"))), "replaced"),
])
def test_a_changed_transcript_is_read_again_from_the_start(tmp_path: Path, change: object,
                                                           why: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines("a", "b"))
    cursor = Cursor(str(path))
    read(path, cursor)
    holder = path.open("rb")  # the old inode stays taken: the new file gets another
    assert callable(change)
    change(path)
    chunk = read_new(path, cursor, Budget())
    holder.close()
    assert chunk.restarted == why
    assert chunk.lines[0][0] == 0 and [line for _, line in chunk.lines] == (
        path.read_bytes().splitlines())


def test_special_files_are_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    done = threading.Event()

    def refuse(path: Path) -> None:
        with pytest.raises(FileRefused, match="not a regular file"):
            read_new(path, Cursor(str(path)), Budget())
        done.set()

    for path in (fifo, Path("/dev/zero"), tmp_path):
        done.clear()
        reader = threading.Thread(target=refuse, args=(path,), daemon=True)
        reader.start()
        reader.join(30)
        assert done.is_set(), path
    with pytest.raises(FileNotFoundError):
        read_new(tmp_path / "gone.jsonl", Cursor("gone"), Budget())


def test_a_line_too_long_is_skipped_and_counted_not_held(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines("a") + b"x" * (3 * MiB) + b"\n" + lines("b"))
    cursor = Cursor(str(path))
    chunk = read_new(path, cursor, Budget(line=MiB))
    assert [line for _, line in chunk.lines] == [b'{"n": "a"}', b'{"n": "b"}']
    assert chunk.too_long == 1 and chunk.end == path.stat().st_size


def test_a_long_line_cut_by_the_budget_is_skipped_across_reads(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines("a") + b"x" * (3 * MiB) + b"\n" + lines("b"))
    cursor = Cursor(str(path))
    seen: list[bytes] = []
    for _ in range(10):
        seen += read(path, cursor, bytes=MiB + 1, line=MiB // 2)
    assert seen == [b'{"n": "a"}', b'{"n": "b"}']


def test_a_byte_budget_leaves_the_rest_for_the_next_read(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    names = [f"line{n:04d}" for n in range(500)]
    path.write_bytes(lines(*names))
    cursor = Cursor(str(path))
    first = read_new(path, cursor, Budget(bytes=4096))
    assert 0 < len(first.lines) < 500 and first.left > 0
    advance(cursor, first)
    rest: list[bytes] = []
    while chunk := read(path, cursor, bytes=4096):
        rest += chunk
    assert [line for _, line in first.lines] + rest == lines(*names).splitlines()
