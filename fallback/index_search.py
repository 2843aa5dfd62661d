"""Search over a file-layer index: the journal's (``FileBackend.search``), or a copy of a server
graph's memories kept in one (``memory.store.team_view``), ranked by the same code."""

from __future__ import annotations

from collections.abc import Sequence

from backends.model import Hit, now
from backends.search.expansion import current_first, fuse
from fallback.index import FileIndex


def search_index(index: FileIndex, query: str, *, group_ids: Sequence[str] | None,
                 kinds: Sequence[str] | None, limit: int, layer: str) -> list[Hit]:
    """The protocol's search over ``index``: lexical, joined by the memories that name an
    entity the query names or one valid fact away from it; what is superseded ranks below
    what is current."""
    groups, wanted = as_set(group_ids), as_set(kinds)
    found = {episode.id: (episode, score)
             for episode, score in index.search(query, groups, wanted, limit)}
    links = index.linked(query, groups, wanted) if limit > 0 else {}
    ranked = []
    for key, score in fuse(((k, s) for k, (_, s) in found.items()), links, limit):
        episode = found[key][0] if key in found else index.get(key)
        if episode is not None:
            ranked.append((episode, score))
    return [Hit(episode=episode, score=score, layer=layer)
            for episode, score in current_first(ranked, now())]


def as_set(values: Sequence[str] | None) -> set[str] | None:
    """A filter for the index (None: no filter)."""
    return None if values is None else set(values)
