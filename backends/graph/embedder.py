"""Embedders turn texts into L2-normalised float32 vectors. The default one is local and
deterministic: feature hashing, so it needs no model download and no network."""

from __future__ import annotations

import itertools
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from backends.search.entities import Extraction
from backends.search.ranking import terms

Vectors = npt.NDArray[np.float32]
CHUNK = 256  # texts embedded together: bounds the temporary (terms x dimension) matrix


class Embedder(Protocol):
    """Anything that embeds texts. ``name`` and ``dimension`` are recorded in the database:
    vectors from different embedders are not comparable."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One L2-normalised row per text (a zero row for a text with no terms)."""
        ...


@runtime_checkable
class AsyncEmbedder(Protocol):
    """An embedder that waits on something (a remote endpoint, ``remote.py``): the same
    contract, awaited, so that the event loop is never blocked."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    async def aembed(self, texts: Sequence[str]) -> Vectors: ...


AnyEmbedder = Embedder | AsyncEmbedder


class Described:
    """An embedder's ``name`` and ``dimension``, read-only, from the ``_name`` and
    ``_dimension`` its constructor sets."""

    _name: str
    _dimension: int

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension


async def embed(embedder: AnyEmbedder, texts: Sequence[str]) -> Vectors:
    if isinstance(embedder, AsyncEmbedder):
        return await embedder.aembed(texts)
    return embedder.embed(texts)


class HashingEmbedder:
    """Each folded, stemmed term and its character trigrams are hashed (crc32, stable across
    processes, unlike ``hash``) to a signed dimension. Trigrams make misspellings and word forms
    land near each other; there is no semantics, so search gives it a small weight."""

    def __init__(self, dimension: int = 128) -> None:
        if dimension < 8:
            raise ValueError("dimension must be at least 8")
        self._dimension = dimension
        self._term_vector = lru_cache(maxsize=32_768)(self._hash_term)  # <= 16 MB at 128

    @property
    def name(self) -> str:
        return "hashing-trigram-v1"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for start in range(0, len(texts), CHUNK):
            self._embed_chunk(texts[start : start + CHUNK], out[start : start + CHUNK])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def _embed_chunk(self, texts: Sequence[str], out: Vectors) -> None:
        """Sum each text's term vectors weighted by 1 + log(tf), in a few numpy calls per chunk
        rather than a few per text (per-text numpy calls were half of the ingest time)."""
        rows: list[int] = []
        columns: list[int] = []
        counts: list[int] = []
        table: dict[str, int] = {}
        for row, text in enumerate(texts):
            tfs = Counter(terms(text))
            rows.extend(itertools.repeat(row, len(tfs)))
            columns.extend([table.setdefault(term, len(table)) for term in tfs])
            counts.extend(tfs.values())
        if not rows:
            return
        vectors = np.vstack([self._term_vector(term) for term in table])
        weights = 1.0 + np.log(np.asarray(counts, dtype=np.float32))
        weighted = vectors[columns] * weights[:, None]
        first = np.flatnonzero(np.diff(rows, prepend=-1))  # where each text's terms begin
        out[np.asarray(rows)[first]] = np.add.reduceat(weighted, first, axis=0)

    def _hash_term(self, term: str) -> Vectors:
        padded = f"<{term}>"
        features = [f"w:{term}", *(f"g:{padded[i : i + 3]}" for i in range(len(padded) - 2))]
        gram_weight = 0.5 / (len(features) - 1) ** 0.5
        digests = [zlib.crc32(feature.encode()) for feature in features]
        signed = [(1.0 if n == 0 else gram_weight) * (1 if digest & 0x8000_0000 else -1)
                  for n, digest in enumerate(digests)]
        buckets = [digest % self._dimension for digest in digests]
        return np.bincount(buckets, weights=signed, minlength=self._dimension).astype(np.float32)


async def structure_vectors(embedder: AnyEmbedder, structures: Sequence[Extraction]
                            ) -> list[dict[str, list[float]]]:
    """For each structure, graphiti's ``name_embedding`` of each entity and ``fact_embedding``
    of each fact, which its own search compares (``Graphiti.search`` with this embedder); one
    call to the embedder for them all."""
    keys = [[e.uuid for e in s.entities] + [f.uuid for f in s.facts] for s in structures]
    texts = [text for s in structures
             for text in [e.name for e in s.entities] + [f.fact for f in s.facts]]
    vectors: Iterator[Vectors] = iter(await embed(embedder, texts) if texts else [])
    return [{key: next(vectors).tolist() for key in some} for some in keys]
