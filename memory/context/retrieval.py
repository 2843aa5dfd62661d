"""Retrieval per category: the project's memories of the category's kinds, searched for the
task's subject and for what the project links to it, one search per distinct text for every
category (``_passes``); the task type's concerns read in what those found
(``memory.context.expansion``); then the blocks that fit an allocation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from functools import lru_cache

from backends.model import Episode, Hit
from backends.protocol import MemoryBackend
from backends.search.ranking import terms
from memory.agent.scopes import (
    ADR,
    ARCHITECTURE,
    CODEBASE_DISCOVERY,
    DOMAIN_KNOWLEDGE,
    FAILED_APPROACH,
    FEATURE_OVERVIEW,
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
from memory.context.expansion import (
    Expander,
    Queries,
    concern_of,
    is_testing,
    known_words,
    subject_of,
)
from memory.context.file_memories import file_memories
from memory.context.format import SECTION_END, Block
from memory.context.memo import SearchMemo
from memory.context.selection import Found, held_terms
from memory.context.tokens import estimate_tokens

C = Category

KINDS: Mapping[Category, tuple[str, ...]] = {
    C.FEATURE: (FEATURE_SPEC, FEATURE_OVERVIEW),
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
    """What every searched category with tokens to fill finds: the subject's searches first,
    then the expanders (which the "known" query is made of, and whose searches of the subject
    ``SearchMemo`` answers from them), then the known query's."""
    wanted = [c for c in KINDS if allocations.get(c, 0) > 0]
    if not wanted:
        return {}
    memo = SearchMemo(store)
    subject = subject_of(analysis)
    bare = {c: queries(c, analysis, "").subject for c in wanted}
    subjects = await _passes(memo, groups, bare, allocations, also=subject)
    known = await known_words(memo, analysis, subject, groups, expanders)
    asked = {c: queries(c, analysis, known) for c in wanted}
    knowns = await _passes(memo, groups, {c: q.known for c, q in asked.items()}, allocations)
    concerns = await _passes(memo, groups, {c: q.concern for c, q in asked.items()},
                             allocations)
    testing = is_testing(analysis)
    union = list(dict.fromkeys(kind for c in wanted for kind in KINDS[c]))
    work = await file_memories(memo, analysis.task.files, groups, union,
                               more_areas=analysis.task.areas)
    return {c: Found(subjects[c], knowns[c],
                     concern_hits([*subjects[c], *knowns[c], *concerns[c]], q.concern),
                     frozenset(terms(q.subject)), testing,
                     [hit for hit in work if hit.episode.kind in KINDS[c]],
                     tuple(analysis.task.files))
            for c, q in asked.items()}


async def _passes(memo: SearchMemo, groups: Sequence[str], texts: Mapping[Category, str],
                  allocations: Mapping[Category, int], also: str = "") -> dict[Category, list[Hit]]:
    """Each category's hits for its text, from one search per distinct text over the kinds of
    every category, for as many hits as they ask together (``also``: one more text searched
    so). A search costs about the same for one kind as for all (the index reads the query's
    postings, links and vectors once per search, and most of a context's searches share their
    text), so this is one search where there were six. A category whose memories all rank
    below that many of the others' gets none: they would fall under the floors of selection."""
    union = list(dict.fromkeys(kind for c in texts for kind in KINDS[c]))
    limit = sum(fetch_limit(allocations[c]) for c in texts)
    distinct = [t for t in dict.fromkeys([*texts.values(), also]) if t.strip()]
    found = dict(zip(distinct, await asyncio.gather(*(
        memo.search(text, group_ids=groups, kinds=union, limit=limit) for text in distinct
    )), strict=True))
    return {c: [hit for hit in found.get(text, []) if hit.episode.kind in KINDS[c]]
            [:fetch_limit(allocations[c])] for c, text in texts.items()}


def concern_hits(hits: Sequence[Hit], concern: str) -> list[Hit]:
    """The memories found, scored by the share of the concern's terms they hold (a term or a
    longer word it begins: "fail" in "failure"). The concern only weighs what the subject's
    searches found (``selection.fuse``), so it is read in their text, not searched."""
    wanted = frozenset(terms(concern))
    if not wanted:
        return []
    scored = {}
    for hit in hits:
        if hit.episode.id not in scored:
            share = concern_share(wanted, hit.episode)
            scored[hit.episode.id] = Hit.model_construct(episode=hit.episode, score=share,
                                                         layer=hit.layer)  # a share: in [0, 1]
    return [hit for hit in scored.values() if hit.score > 0]


@lru_cache(maxsize=4096)
def concern_share(wanted: frozenset[str], episode: Episode) -> float:
    """The share of ``wanted`` that ``episode`` holds; kept for the memories seen lately (every
    category reads it in what all found, and a task type's concern is the same every time)."""
    held = held_terms(episode)
    return sum(any(t.startswith(w) for t in held) for w in wanted) / len(wanted)


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
