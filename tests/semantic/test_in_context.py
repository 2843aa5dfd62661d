"""Memories in context: a memory written in a sequence (one group, kind and source, one after
another) is found by a question about what was said around it, through the graph index's
search by meaning; what a memory records decides its sequence, and a later write changes its
neighbours' context."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from backends.graph import in_context
from backends.graph.index import Entry, EpisodeIndex
from backends.model import Episode

DIMENSION = 4
START = datetime(2026, 3, 1, 9, tzinfo=UTC)
# The question's direction is the first axis; the answer turn's own vector is half along it,
# its neighbours' nearly along it (and kin of the answer's), the distractor's closer than the
# answer's own but alone in its sequence.
ASKED = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
AROUND = np.array([0.8, 0.6, 0.0, 0.0], dtype=np.float32)
ANSWER = np.array([0.5, 0.0, 0.866, 0.0], dtype=np.float32)
DISTRACTOR = np.array([0.6, 0.0, 0.0, 0.8], dtype=np.float32)
ELSEWHERE = np.array([0.0, 0.0, 0.0, 1.0], dtype=np.float32)


def turn(key: str, minute: int, *, source: str = "import", kind: str = "dialog_turn"
         ) -> Episode:
    return Episode(id=key, group_id="chat", kind=kind, name=key, body=f"turn {key}",
                   source=source, created_at=START + timedelta(minutes=minute))


def nearest(index: EpisodeIndex, *, in_context_: bool = True) -> list[str]:
    return [key for key, _ in index.neighbours([], ASKED, groups=None, kinds=None, limit=3,
                                               floor=-1.0, in_context=in_context_)]


def test_a_turn_is_found_by_what_was_said_around_it(tmp_path: Path) -> None:
    index = EpisodeIndex.open(tmp_path, DIMENSION, "test")
    try:
        index.put([Entry(turn("t1", 0), "", AROUND), Entry(turn("t2", 1), "", ANSWER),
                   Entry(turn("t3", 2), "", AROUND),
                   Entry(turn("note", 3, source="api", kind="note"), "", DISTRACTOR)])
        # By their own vectors: the neighbours, then the distractor; the answer is fourth.
        assert nearest(index, in_context_=False) == ["t1", "t3", "note"]
        assert nearest(index) == ["t1", "t3", "t2"]
    finally:
        index.close()


def test_a_later_write_gives_its_neighbour_context(tmp_path: Path) -> None:
    index = EpisodeIndex.open(tmp_path, DIMENSION, "test")
    try:
        index.put([Entry(turn("t2", 1), "", ANSWER),
                   Entry(turn("note", 3, source="api", kind="note"), "", DISTRACTOR),
                   Entry(turn("other", 4, source="api", kind="gotcha"), "", ELSEWHERE)])
        assert nearest(index)[0] == "note"  # alone in its sequence, the answer is not first
        index.put([Entry(turn("t1", 0), "", AROUND)])
        assert nearest(index)[:2] == ["t1", "t2"]  # the answer now has its context
    finally:
        index.close()


def test_a_sequence_is_one_writer_s_memories_of_one_kind_without_a_pause() -> None:
    written = [in_context.Written.of(e) for e in (
        turn("turn-10", 0), turn("turn-2", 0), turn("turn-3", 0),  # one instant: by number
        turn("turn-4", 0, source="api"),  # another writer
        turn("turn-5", 0, kind="note"),  # another kind
        turn("turn-6", 2 * 60),  # after a pause longer than GAP
    )]
    assert sorted(in_context.sequences(written)) == [[1, 2, 0], [3], [4], [5]]


def test_unrelated_memories_written_at_once_keep_their_own_vectors() -> None:
    written = [in_context.Written.of(turn(f"n{n}", 0)) for n in range(3)]
    vectors = np.eye(3, DIMENSION, dtype=np.float32)  # orthogonal: no kin
    context = in_context.Context.build(range(3), written, vectors)
    similarity = vectors @ ASKED
    assert np.array_equal(context.cosines(similarity), similarity)
