"""The graph index's vectors, read in place: one float32 matrix beside ``index.sqlite3``, so a
search's vector candidates are a matrix product over the file, read a block at a time straight
into one buffer: no row read out of SQLite, none decoded (reading 100k vectors out of SQLite took
1.7 s per process), and the process does not grow with the store (a mapped file's pages count
as the process's memory once read: 51 MB at 100k and dimension 128).

``<graph>/vectors.f32``: a header of ``HEADER`` bytes (``MAGIC``, the dimension as a
little-endian u32, the token of the index build it belongs to as 32 ASCII hex digits, zeros),
then rows of ``dimension`` little-endian float32s, each rounded to float16 as the graph stores
it (so a rebuild from the graph's rows gives the same matrix). Not float16 on disk: numpy widens
float16 at some 0.5 ms per 1k rows of 128, ten times the product itself. The file may hold more
rows than are in use (it grows by doubling).

Which row holds which episode is the index's to say (``index.EpisodeIndex``): a row is written
before the transaction that points a key at it commits, and a rewritten episode goes to a fresh
row, so a reader in any process never meets a half-written row under a key it can see. Rows no
key points at are zeroed, or left over from a write that never committed; either way no key
reads them. A read-only or unkeepable index holds its matrix in memory, the same way.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from backends.graph.embedder import Vectors
from backends.safe_files import open_for_write

FILE = "vectors.f32"
MAGIC = b"dmvecf32"
HEADER = 64
_TOKEN = slice(12, 44)
_STORED = np.dtype("<f4")
BLOCK = 4096  # rows read at once: 2 MB at dimension 128


class VectorFile:
    """The matrix in one file (or in memory: ``path`` None)."""

    def __init__(self, path: Path | None, dimension: int, fd: int | None, buffer: bytearray
                 ) -> None:
        self.path = path
        self._dimension = dimension
        self._row_bytes = dimension * _STORED.itemsize
        self._fd = fd
        self._memory = buffer
        """the whole file's bytes when in memory; the header alone for a file"""

    @classmethod
    def open(cls, path: Path | None, dimension: int) -> VectorFile:
        """The file at ``path`` as it is (``stamp`` says whether it is usable), an empty one
        when missing; ``path`` None: an empty matrix in memory. Raises ``OSError``, and
        ``FileRefused`` for a symbolic link."""
        if path is None:
            return cls(None, dimension, None, bytearray(HEADER))
        fd = open_for_write(path, os.O_RDWR | os.O_CREAT)
        return cls(path, dimension, fd, bytearray(os.pread(fd, HEADER, 0)))

    @classmethod
    def create(cls, path: Path | None, dimension: int, token: str, vectors: Vectors
               ) -> VectorFile:
        """A new matrix stamped ``token`` whose row ``i`` is ``vectors[i]``; a file is written
        aside and moved over the old one whole, so an open never finds it half written."""
        header = bytearray(HEADER)
        header[: len(MAGIC)] = MAGIC
        header[len(MAGIC) : len(MAGIC) + 4] = dimension.to_bytes(4, "little")
        header[_TOKEN] = token.encode("ascii")
        body = _stored(vectors).tobytes()
        if path is None:
            return cls(None, dimension, None, header + body)
        part = path.with_name(path.name + ".part")
        with os.fdopen(open_for_write(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as out:
            out.write(header)
            out.write(body)
        os.replace(part, path)
        return cls.open(path, dimension)

    def stamp(self) -> str | None:
        """The token of the build this matrix belongs to; None when it is not one of ours, of
        another dimension, or cut short in its header."""
        header = bytes(self._memory[:HEADER])
        if (len(header) < HEADER or header[: len(MAGIC)] != MAGIC
                or int.from_bytes(header[len(MAGIC) : len(MAGIC) + 4], "little")
                != self._dimension):
            return None
        try:
            return header[_TOKEN].decode("ascii")
        except UnicodeDecodeError:
            return None

    def rows(self) -> int:
        """How many whole rows the matrix holds."""
        size = len(self._memory) if self._fd is None else os.fstat(self._fd).st_size
        return max(0, size - HEADER) // self._row_bytes

    def write(self, rows: Sequence[int], vectors: Vectors) -> None:
        """Row ``rows[i]`` := ``vectors[i]``, the matrix grown to hold them. Raises ``OSError``
        (a full disk)."""
        if not rows:
            return
        data = _stored(vectors)
        self._grow(max(rows) + 1)
        first = 0
        for last in range(len(rows)):  # one write per run of consecutive rows
            if last + 1 < len(rows) and rows[last + 1] == rows[last] + 1:
                continue
            at = HEADER + rows[first] * self._row_bytes
            raw = data[first : last + 1].tobytes()
            if self._fd is None:
                self._memory[at : at + len(raw)] = raw
            else:
                os.pwrite(self._fd, raw, at)
            first = last + 1

    def clear(self, rows: Sequence[int]) -> None:
        """Zero ``rows`` (no key reads them any more): they stop matching any query."""
        held = self.rows()
        kept = [row for row in rows if row < held]
        self.write(kept, np.zeros((len(kept), self._dimension), dtype=np.float32))

    def similarities(self, query: Vectors, rows: int) -> npt.NDArray[np.float32]:
        """The query's dot product with each of the first ``rows`` rows (rows the matrix does
        not hold count as zero vectors)."""
        held = min(rows, self.rows())
        out = np.zeros(rows, dtype=np.float32)
        query = query.astype(np.float32)
        if self._fd is None:
            _product(np.frombuffer(self._memory, dtype=_STORED, count=held * self._dimension,
                                   offset=HEADER).reshape(held, self._dimension), query,
                     out[:held])
            return out
        block = np.empty((min(BLOCK, held), self._dimension), dtype=_STORED)
        for start in range(0, held, BLOCK):
            want = block[: min(BLOCK, held - start)]
            got = os.preadv(self._fd, [want.data.cast("B")],
                            HEADER + start * self._row_bytes) // self._row_bytes
            _product(want[:got], query, out[start : start + got])
        return out

    def matrix(self, rows: int) -> npt.NDArray[np.float32]:
        """The first ``rows`` rows (rows the matrix does not hold are zero vectors)."""
        held = min(rows, self.rows())
        out = np.zeros((rows, self._dimension), dtype=np.float32)
        raw = (self._memory[HEADER : HEADER + held * self._row_bytes] if self._fd is None
               else os.pread(self._fd, held * self._row_bytes, HEADER))
        out[: len(raw) // self._row_bytes] = np.frombuffer(raw, dtype=_STORED).reshape(
            -1, self._dimension)[: held]
        return out

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _grow(self, rows: int) -> None:
        held = self.rows()
        if rows <= held:
            return
        size = HEADER + max(rows, 2 * held, 64) * self._row_bytes
        if self._fd is None:
            self._memory.extend(bytes(size - len(self._memory)))
        else:
            os.ftruncate(self._fd, size)


def _stored(vectors: Vectors) -> Vectors:
    return np.ascontiguousarray(np.asarray(vectors, dtype=np.float16), dtype=_STORED)


def _product(matrix: Vectors, query: Vectors, out: npt.NDArray[np.float32]) -> None:
    # einsum, not `@`: BLAS would spread the product over threads, and on a busy machine their
    # wake-ups cost more than the arithmetic.
    np.einsum("ij,j->i", matrix, query, out=out)
