"""A long prompt reduced to its salient terms: those the project's memory knows.

A search's score is the share of the best score a memory could reach for the query, and every
query term the memory does not hold counts against it, a word the project never uses most of
all (it could be the rarest). A prompt of two sentences ("Add a refund endpoint POST
/orders/{id}/refund that calls Stripe refunds with retries, validate the amount ...") holds a
dozen such words, and the one gotcha it needs ("Stripe refunds must be retried ...") falls
under the bar that a short prompt clears. So a long prompt is searched once, and its terms that
none of the memories found holds are left out of the search that counts.
"""

from __future__ import annotations

from collections.abc import Sequence

from backends.model import Hit
from backends.protocol import MemoryBackend
from backends.search.ranking import search_text, terms

LONG = 8
"""distinct terms from which a prompt is long"""
PROBE = 20
"""memories read for the terms the project knows"""


async def salient_query(store: MemoryBackend, query: str, groups: Sequence[str]) -> str:
    """``query``, or, when it is long, its terms that the best ``PROBE`` memories found for
    it hold (in the query's order; the query itself when none or all are)."""
    wanted = list(dict.fromkeys(terms(query)))
    if len(wanted) < LONG:
        return query
    hits: list[Hit] = await store.search(query, group_ids=list(groups), limit=PROBE)
    known: set[str] = set()
    for hit in hits:
        known.update(terms(search_text(hit.episode)))
    kept = [term for term in wanted
            if term in known or any(word.startswith(term) for word in known)]
    return " ".join(kept) if kept and len(kept) < len(wanted) else query
