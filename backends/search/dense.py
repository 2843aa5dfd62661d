"""BM25 of every matching document at once, with numpy: the scorer of long-running processes.

``topk`` walks postings one at a time in Python (~1 us each); a query of frequent words at 100k
memories walks 100k-250k of them, and no bound skips enough. Here each vocabulary term's postings
are read as the packed arrays ``textindex`` stores and scored as whole arrays into one array
indexed by document number, which costs a few nanoseconds a posting.

Scores are bit-for-bit those of ``topk``: the same float operations in the same order (a
posting's value is ``gain * tf / (tf + flat + per_length * length)``, a widened term takes the
largest of its variants, and a document's score adds its terms' values in the order of the
plans given). numpy is imported by the caller, and only where it is worth its start-up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

Blobs = tuple[bytes, bytes, bytes]
"""one chunk's document numbers (u32), term frequencies and lengths (u16), as stored"""


def _values(chunks: Iterable[Blobs], gain: float, flat: float,
            per_length: float) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64]]:
    """The documents of one vocabulary term's chunks and what each posting adds."""
    listed = list(chunks)
    docs = np.frombuffer(b"".join(c[0] for c in listed), dtype=np.uint32)
    tfs = np.frombuffer(b"".join(c[1] for c in listed), dtype=np.uint16)
    lens = np.frombuffer(b"".join(c[2] for c in listed), dtype=np.uint16)
    if not len(docs):
        return docs, np.zeros(0)
    most_tf, longest = int(tfs.max()), int(lens.max())
    if (most_tf + 1) * (longest + 1) > len(docs):  # rare: a few long or repetitive documents
        tf, size = tfs.astype(np.float64), lens.astype(np.float64)
        return docs, gain * tf / (tf + flat + per_length * size)
    # Few distinct (tf, length) pairs: each value is computed once, in a table, then looked up.
    tf = np.arange(most_tf + 1, dtype=np.float64)[:, None]
    size = np.arange(longest + 1, dtype=np.float64)[None, :]
    return docs, (gain * tf / (tf + flat + per_length * size))[tfs, lens]


def top(
    plans: Sequence[Sequence[tuple[str, float]]],
    postings: Callable[[str], Iterable[Blobs]],
    *,
    documents: int,
    flat: float,
    per_length: float,
    limit: int,
) -> dict[int, float]:
    """Document -> score for the best ``limit`` (and any tied with the last of them). ``plans``
    are the query terms' (vocabulary term, gain) variants; ``postings`` gives a vocabulary
    term's chunks (within the filter); document numbers are below ``documents``."""
    total = np.zeros(documents, dtype=np.float64)
    for variants in plans:
        if len(variants) == 1:
            docs, values = _values(postings(variants[0][0]), variants[0][1], flat, per_length)
            total[docs] += values  # a document is in one chunk of a term: no repeats
            continue
        best = np.zeros(documents, dtype=np.float64)
        for variant, gain in variants:
            docs, values = _values(postings(variant), gain, flat, per_length)
            np.maximum.at(best, docs, values)
        total += best  # adding 0.0 where a term is missing leaves a score as it was
    matched = np.flatnonzero(total)
    count = min(limit, len(matched))
    if not count:
        return {}
    # Selecting among many zeros is slow: among the matched only, unless they are most.
    among = total if 2 * len(matched) > documents else total[matched]
    floor = max(np.partition(among, -count)[-count], np.finfo(np.float64).tiny)
    kept = np.flatnonzero(total >= floor)
    return dict(zip(kept.tolist(), total[kept].tolist(), strict=True))
