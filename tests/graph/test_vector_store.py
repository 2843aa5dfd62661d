"""The graph index's vectors, read in place from ``vectors.f32``: after any puts, rewrites,
drops, reopens and rebuilds they answer as a store built at once from what was written, and a
matrix file missing, torn, of another build or of another dimension is never used as it is."""

from __future__ import annotations

import errno
import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.graph.embedder import Vectors
from backends.graph.index import Entry, EpisodeIndex
from backends.graph.vectors import FILE as VECTOR_FILE
from backends.graph.vectors import HEADER, VectorFile
from backends.model import Episode

DIMENSION = 8
EMBEDDER = "test"
# Each vector leans on one or two of a few directions: many pairs are near (cosine >= 0.6),
# some are equal (ties), so ordering, filters and the threshold all take part.
VECTORS = st.tuples(st.integers(0, 3), st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0]))
STEPS = st.lists(st.one_of(
    st.tuples(st.just("put"), st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), VECTORS),
                                       min_size=1, max_size=4)),
    st.tuples(st.sampled_from(["drop"]), st.integers(0, 5)),
    st.tuples(st.sampled_from(["reopen", "rebuild"]), st.just(0)),
), max_size=25)
QUERIES = [np.eye(DIMENSION, dtype=np.float32)[i] for i in range(4)] + [
    np.full(DIMENSION, DIMENSION ** -0.5, dtype=np.float32)]


def vector(shape: tuple[int, int, float]) -> Vectors:
    first, second, weight = shape
    raw = np.eye(DIMENSION, dtype=np.float32)[first] + weight * np.eye(
        DIMENSION, dtype=np.float32)[second]
    out: Vectors = (raw / np.linalg.norm(raw)).astype(np.float32)
    return out


def entry(n: int, place: int, shape: tuple[int, int, float]) -> Entry:
    episode = Episode.parse(id=f"ep-{n}", group_id=f"g{place % 2}",
                            kind=("note", "gotcha")[place // 2], name=f"memory {n}",
                            body=f"body of {n}", created_at=datetime(2026, 1, 1, tzinfo=UTC))
    return Entry(episode, episode.body, vector(shape))


def nearest(index: EpisodeIndex) -> list[object]:
    return [index.neighbours([], query, groups=groups, kinds=kinds, limit=limit)
            for query in QUERIES for groups, kinds in ((None, None), (["g0"], None),
                                                       (None, ["gotcha"]))
            for limit in (1, 3, 10)]


@pytest.fixture
def folder() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="dualmem-vectors-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@settings(deadline=None, max_examples=60)
@given(steps=STEPS)
def test_kept_write_by_write_the_vectors_answer_as_built_at_once(
    steps: list[tuple[str, object]],
) -> None:
    root = Path(tempfile.mkdtemp(prefix="dualmem-vectors-"))
    index = EpisodeIndex.open(root, DIMENSION, EMBEDDER)
    token = index.rebuilt([])
    model: dict[str, Entry] = {}
    try:
        for action, arg in steps:
            if action == "put":
                written = [entry(*spec) for spec in arg]  # type: ignore[attr-defined]
                index.put(written)
                model.update((e.episode.id, e) for e in written)
            elif action == "drop":
                index.drop(f"ep-{arg}")
                model.pop(f"ep-{arg}", None)
            elif action == "reopen":
                index.close()
                index = EpisodeIndex.open(root, DIMENSION, EMBEDDER)
                assert index.current(token, len(model))
            else:
                token = index.rebuilt(list(model.values()))
        built = EpisodeIndex.open(None, DIMENSION, EMBEDDER)
        built.rebuilt(list(model.values()))
        assert nearest(index) == nearest(built)
        built.close()
    finally:
        index.close()
        shutil.rmtree(root, ignore_errors=True)


def tear(path: Path) -> None:
    """Cut off the last row (a write the disk never finished)."""
    path.write_bytes(path.read_bytes()[:-1])


def cut_header(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: HEADER // 2])


def foreign(path: Path) -> None:
    """Another build's file (same shape, another token)."""
    (path.parent / "other").mkdir()
    other = EpisodeIndex.open(path.parent / "other", DIMENSION, EMBEDDER)
    other.rebuilt([entry(n, 0, (n % 4, 0, 0.0)) for n in range(3)])
    other.close()
    shutil.copyfile(path.parent / "other" / VECTOR_FILE, path)


def other_dimension(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[8:12] = (2 * DIMENSION).to_bytes(4, "little")
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("damage", [Path.unlink, tear, cut_header, foreign, other_dimension,
                                    lambda path: path.write_bytes(b"not vectors" * 20)])
def test_a_matrix_file_not_of_this_build_is_not_used_and_is_built_again(
    folder: Path, damage: object,
) -> None:
    index = EpisodeIndex.open(folder, DIMENSION, EMBEDDER)
    written = [entry(n, n, (n % 4, (n + 1) % 4, 0.5)) for n in range(3)]
    token = index.rebuilt(written)
    index.close()
    damage(folder / VECTOR_FILE)  # type: ignore[operator]
    index = EpisodeIndex.open(folder, DIMENSION, EMBEDDER)
    try:
        assert not index.current(token, len(written))
        token = index.rebuilt(written)
        index.close()
        index = EpisodeIndex.open(folder, DIMENSION, EMBEDDER)
        assert index.current(token, len(written))
        found = index.neighbours([], written[1].vector, groups=None, kinds=None, limit=1)
        assert [key for key, _ in found] == ["ep-1"]
    finally:
        index.close()


def test_no_room_for_the_matrix_file_searches_from_memory_and_builds_again_next_open(
    folder: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    create = VectorFile.create

    def full(path: Path | None, *args: object) -> VectorFile:
        if path is not None:
            raise OSError(errno.ENOSPC, "No space left on device")
        return create(path, *args)  # type: ignore[arg-type]

    written = [entry(n, n, (n % 4, (n + 1) % 4, 0.5)) for n in range(3)]
    index = EpisodeIndex.open(folder, DIMENSION, EMBEDDER)
    monkeypatch.setattr(VectorFile, "create", staticmethod(full))
    try:
        token = index.rebuilt(written)
        found = index.neighbours([], written[2].vector, groups=None, kinds=None, limit=1)
        assert [key for key, _ in found] == ["ep-2"]
    finally:
        index.close()
    monkeypatch.undo()
    index = EpisodeIndex.open(folder, DIMENSION, EMBEDDER)
    try:
        assert not index.current(token, len(written))
    finally:
        index.close()
