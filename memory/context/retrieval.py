"""Retrieval per category: the project's memories of the category's kinds, searched for the
task's subject, for what the project links to it and for its type's concerns
(``memory.context.expansion``), every search at once; then the blocks that fit an allocation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from backends.model import Hit
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
    RECOMMENDATION,
    TASK_OUTCOME,
    project_group,
)
from memory.context.analysis import Analysis
from memory.context.budget import Category
from memory.context.expansion import Expander, Queries, concern_of, known_words, subject_of
from memory.context.format import SECTION_END, Block
from memory.context.selection import Found
from memory.context.tokens import estimate_tokens

C = Category

KINDS: Mapping[Category, tuple[str, ...]] = {
    C.FEATURE: (FEATURE_SPEC,),
    C.SIMILAR_OUTCOMES: (TASK_OUTCOME,),
    C.PATTERNS: (PATTERN, RECOMMENDATION),
    C.ARCHITECTURE: (ARCHITECTURE, PROJECT_OVERVIEW, ADR, CODEBASE_DISCOVERY),
    C.WARNINGS: (GOTCHA, FAILED_APPROACH),
    C.DOMAIN: (DOMAIN_KNOWLEDGE,),
}
MIN_FETCH, MAX_FETCH = 8, 30
TOKENS_PER_FETCHED = 40  # fetch about one candidate per 40 tokens of allocation
MIN_CLIP_CHARS = 80  # a memory clipped shorter than this says too little to keep


def project_groups(project_id: str) -> list[str]:
    """The groups a project's context reads: its own, where every spec's memories live."""
    return [project_group(project_id)]


def queries(category: Category, analysis: Analysis, known: str) -> Queries:
    task = analysis.task
    extra: tuple[str | None, ...] = ()
    if category is C.FEATURE:
        extra = (task.feature_id,)
    elif category is C.PATTERNS:
        extra = (task.tech_stack,)
    elif category is C.WARNINGS and analysis.is_refinement:
        extra = (task.last_failure_type,)
    subject = " ".join([*filter(None, extra), subject_of(analysis)])
    return Queries(subject, known, concern_of(analysis))


def fetch_limit(allocation: int) -> int:
    return max(MIN_FETCH, min(MAX_FETCH, allocation // TOKENS_PER_FETCHED))


async def search_categories(
    store: MemoryBackend,
    analysis: Analysis,
    groups: Sequence[str],
    allocations: Mapping[Category, int],
    expanders: Sequence[Expander],
) -> dict[Category, Found]:
    """What every searched category with tokens to fill finds, all searches at once (after the
    expanders, which the "known" query is made of)."""
    wanted = [c for c in KINDS if allocations.get(c, 0) > 0]
    if not wanted:
        return {}
    known = await known_words(store, analysis, subject_of(analysis), groups, expanders)

    async def search(text: str, category: Category) -> list[Hit]:
        if not text.strip():
            return []
        return await store.search(text, group_ids=groups, kinds=KINDS[category],
                                  limit=fetch_limit(allocations[category]))

    async def find(category: Category) -> Found:
        q = queries(category, analysis, known)
        subject, known_hits, concern = await asyncio.gather(
            search(q.subject, category), search(q.known, category), search(q.concern, category)
        )
        return Found(subject, known_hits, concern)

    results = await asyncio.gather(*(find(c) for c in wanted))
    return dict(zip(wanted, results, strict=True))


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
