"""The id-prefix property, for every store that finds ids by prefix
(``backends.protocol.FindsIds``): ``ids_starting(p, group_ids=g)`` is the sorted ids of
``scan(group_ids=g)`` that start with ``p``, whatever the ids, the prefix and the groups."""

from __future__ import annotations

from hypothesis import strategies as st

from backends.model import EPISODE_ID, Episode
from backends.protocol import FindsIds, MemoryBackend

GROUPS = ("g1", "g2")
STORED = st.lists(st.tuples(st.from_regex(EPISODE_ID, fullmatch=True).map(lambda i: i[:12]),
                            st.sampled_from(GROUPS)), max_size=12)
"""(id, group) of the memories an example adds"""
ASKED = {"picked": st.integers(min_value=0), "cut": st.integers(min_value=0, max_value=12),
         "other": st.text(max_size=4),
         "groups": st.sampled_from([None, ["g1"], ["g2"], [], list(GROUPS)])}
"""a prefix of one id added (``picked``, ``cut``), any text (``other``), the groups asked for"""


def memories(stored: list[tuple[str, str]]) -> list[Episode]:
    return [Episode.parse(id=key, group_id=group, kind="note", name=key, body="b")
            for key, group in stored]


def prefixes(stored: list[tuple[str, str]], picked: int, cut: int, other: str) -> list[str]:
    return [other, *([stored[picked % len(stored)][0][:cut]] if stored else [])]


async def check_ids(store: MemoryBackend, asked: list[str], groups: list[str] | None) -> None:
    assert isinstance(store, FindsIds)
    for prefix in asked:
        scanned = sorted([e.id async for e in store.scan(group_ids=groups)
                          if e.id.startswith(prefix)])
        assert await store.ids_starting(prefix, group_ids=groups) == scanned, prefix
