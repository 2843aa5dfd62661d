"""Near-duplicates: free-text memories of one kind whose texts say the same thing in nearly the
same words (what exact keys cannot join: "Retry with backoff." and "retry, with back-off").
Listed for a person to check; merged on request into the oldest of each set, each merged
memory's text kept in its history (``restore`` brings it back)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz, process

from backends.model import Episode, natural_key
from backends.protocol import MemoryBackend
from fallback.versions import Versions

SIMILAR = 90.0
"""the least rapidfuzz ``ratio`` (0-100) of two texts, folded and without spaces, that counts
as the same memory: a word's spelling or hyphen may differ, not what it says"""


@dataclass(frozen=True)
class Duplicates:
    keep: Episode
    """the oldest of the set: the one the others merge into"""
    others: tuple[Episode, ...]

    def to_json(self) -> dict[str, Any]:
        return {"keep": self.keep.to_json(), "others": [e.to_json() for e in self.others]}


async def near_duplicates(store: MemoryBackend, group_ids: Sequence[str],
                          similar: float = SIMILAR) -> list[Duplicates]:
    """Every set of near-duplicate free-text memories of ``group_ids``, by kind."""
    by_kind: dict[tuple[str, str], list[Episode]] = defaultdict(list)
    async for episode in store.scan(group_ids=group_ids):
        if episode.data is None:  # a structured memory's keys say what it is
            by_kind[episode.group_id, episode.kind].append(episode)
    found = []
    for episodes in by_kind.values():
        texts = [natural_key(episode.body).replace(" ", "") for episode in episodes]
        taken: set[int] = set()
        for first, text in enumerate(texts):  # scan() is oldest first: the first one keeps
            if first in taken or not text:
                continue
            same = [index for _, _, index in process.extract(
                text, texts, scorer=fuzz.ratio, score_cutoff=similar, limit=None)
                if index > first and index not in taken]
            if same:
                taken.update(same)
                found.append(Duplicates(episodes[first], tuple(episodes[i] for i in same)))
    return found


async def merge(store: MemoryBackend, versions: Versions, found: Duplicates) -> None:
    """Merge ``found.others`` into ``found.keep``: each one's text is kept in its history."""
    for other in found.others:
        versions.keep("merged", other, reason=f"a near-duplicate of {found.keep.id}",
                      into=found.keep.id)
        await store.delete(other.id)
