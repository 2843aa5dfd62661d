"""Retrieval per category: a search of the project's memories of the category's kinds, kept
above a relevance threshold (``memory.context.thresholds``), deduplicated across categories,
then trimmed to the category's token allocation. Categories are searched concurrently.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from contextlib import suppress
from datetime import datetime

from backends.model import Episode, Hit, natural_key
from backends.protocol import MemoryBackend
from memory.agent.scopes import (
    ADR,
    ARCHITECTURE,
    CODEBASE_DISCOVERY,
    DOMAIN_KNOWLEDGE,
    FAILED_APPROACH,
    FEATURE_SPEC,
    GOTCHA,
    PATTERN,
    PROJECT_OVERVIEW,
    project_group,
)
from memory.context.analysis import Analysis
from memory.context.budget import Category
from memory.context.format import SECTION_END, Block
from memory.context.task import topic
from memory.context.tokens import estimate_tokens

C = Category

KINDS: Mapping[Category, tuple[str, ...]] = {
    C.FEATURE: (FEATURE_SPEC,),
    C.PATTERNS: (PATTERN,),
    C.ARCHITECTURE: (ARCHITECTURE, PROJECT_OVERVIEW, ADR, CODEBASE_DISCOVERY),
    C.WARNINGS: (GOTCHA, FAILED_APPROACH),
    C.DOMAIN: (DOMAIN_KNOWLEDGE,),
}
MIN_FETCH, MAX_FETCH = 3, 20
TOKENS_PER_FETCHED = 50  # fetch about one candidate per 50 tokens of allocation
MIN_CLIP_CHARS = 80  # a memory clipped shorter than this says too little to keep


def project_groups(project_id: str, feature_id: str | None) -> list[str]:
    """The project's group, and the feature's spec group when the task names a feature."""
    groups = [project_group(project_id)]
    if feature_id:
        with suppress(ValueError):  # a feature id that cannot name a group has no spec group
            groups.append(project_group(project_id, feature_id))
    return groups


def query(category: Category, analysis: Analysis) -> str:
    task = analysis.task
    extra: tuple[str | None, ...] = ()
    if category is C.FEATURE:
        extra = (task.feature_id,)
    elif category is C.PATTERNS:
        extra = (task.tech_stack,)
    elif category is C.WARNINGS and analysis.is_refinement:
        extra = (task.last_failure_type,)
    return " ".join([*filter(None, extra), topic(task.description)])


def fetch_limit(allocation: int) -> int:
    return max(MIN_FETCH, min(MAX_FETCH, allocation // TOKENS_PER_FETCHED))


def in_force(episode: Episode, at: datetime) -> bool:
    """Superseded and deprecated memories (``invalid_at`` passed) are history, not advice."""
    return episode.invalid_at is None or episode.invalid_at > at


async def search_categories(
    store: MemoryBackend,
    analysis: Analysis,
    groups: Sequence[str],
    allocations: Mapping[Category, int],
) -> dict[Category, list[Hit]]:
    """The hits of every searched category that has tokens to fill, fetched concurrently."""
    wanted = [c for c in KINDS if allocations.get(c, 0) > 0]
    results = await asyncio.gather(
        *(
            store.search(
                query(c, analysis), group_ids=groups, kinds=KINDS[c],
                limit=fetch_limit(allocations[c]),
            )
            for c in wanted
        )
    )
    return dict(zip(wanted, results, strict=True))


def select(
    hits: Mapping[Category, Sequence[Hit]],
    allocations: Mapping[Category, int],
    threshold: float,
    at: datetime,
) -> dict[Category, list[Episode]]:
    """Relevant memories per category, each memory once: a memory found by several categories
    (or stored twice with the same text) goes to the category with the larger allocation."""
    seen: set[str] = set()
    chosen: dict[Category, list[Episode]] = {}
    for category in sorted(hits, key=lambda c: (-allocations.get(c, 0), list(Category).index(c))):
        kept = chosen[category] = []
        for hit in hits[category]:
            episode = hit.episode
            if hit.score < threshold or not in_force(episode, at):
                continue
            fingerprint = natural_key(f"{episode.name} {episode.body}")
            if episode.id in seen or fingerprint in seen:
                continue
            seen.update((episode.id, fingerprint))
            kept.append(episode)
    return chosen


def fit(head: str, blocks: Sequence[Block], allocation: int) -> tuple[list[Block], int]:
    """The blocks, in priority order, that fit with the section's head in ``allocation``
    tokens, clipping one that is too long when enough of it fits; and the tokens they take.
    Costs are summed per part: the estimate of the joined text is never more (subadditive)."""
    used = estimate_tokens(head + SECTION_END)
    kept: list[Block] = []
    for block in blocks:
        room = allocation - used
        candidate: Block | None = block
        cost = estimate_tokens(block.text)
        if cost > room:
            candidate = _clip_to(block, room)
            cost = estimate_tokens(candidate.text) if candidate else 0
        if candidate is not None and cost <= room:
            kept.append(candidate)
            used += cost
    if not kept:
        return [], 0
    return sorted(kept, key=lambda b: b.order), used


def _clip_to(block: Block, room: int) -> Block | None:
    """The longest clipping of ``block`` that costs at most ``room`` tokens, if one is long
    enough to be worth keeping."""
    if block.clip_from is None:
        return None
    clippable = len(block.text) - 1 - block.clip_from
    low, high = MIN_CLIP_CHARS, min(clippable - 1, room * 4)
    best = None
    while low <= high:
        middle = (low + high) // 2
        candidate = block.clipped(middle)
        if estimate_tokens(candidate.text) <= room:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    return best
