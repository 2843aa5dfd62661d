"""What a context searches for, beyond the description's words.

A category is searched with up to three queries, fused by ``memory.context.selection``:

- **subject**: what the task is about: its topic (``task.topic``) without the words of its
  type's concerns, plus the category's own additions (feature id, tech stack, the failure a
  refinement follows);
- **known**: what the project knows about that subject: the words of the files, modules and
  services its memory links to the subject, found by the ``Expander``s;
- **concern**: what a task of this type usually needs: tests and fixtures for a testing task,
  failures for a refinement, risks for a review.

An ``Expander`` is the seam for other knowledge: ``project_files`` reads the codebase
discoveries; ``named_entities`` the files, modules and components that the task and the
memories that match it best name (``backends.search.entities``, the same in every process). Entity
names stay whole in the "known" query, so its search links them outright: a memory that
mentions ``app/clients/stripe_client.py`` is reached through the file, not its words.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from backends.model import Episode
from backends.protocol import MemoryBackend
from backends.search.entities import extract
from backends.search.text_names import text_entities
from memory.agent.scopes import (
    CODEBASE_DISCOVERY,
    FAILED_APPROACH,
    GOTCHA,
    PATTERN,
    RECOMMENDATION,
    TASK_OUTCOME,
)
from memory.context.analysis import Analysis, TaskType
from memory.context.task import Phase, topic

Expander = Callable[[MemoryBackend, Analysis, str, Sequence[str]], Awaitable[Sequence[str]]]
"""``(store, analysis, subject query, groups) -> texts`` the project links to the subject"""

TESTING_TYPES = frozenset({"testing", "test", "tests"})
# A task type's usual concerns, searched beside the subject with a lower weight.
CONCERNS: Mapping[str, str] = {
    "testing": "test tests fixture fixtures stub fake mock",
    TaskType.REFINEMENT: "failed failure bug broke error",
    TaskType.REVIEW: "risk never must avoid",
    TaskType.PLANNING: "decision architecture",
    TaskType.DOCUMENTATION: "",
    TaskType.IMPLEMENTATION: "",
}
_WORD = re.compile(r"[^\W_]+")
KNOWN_FILES = 3  # discoveries whose words join the "known" query
KNOWN_RELATIVE = 0.5  # ... when they score at least this share of the best discovery


@dataclass(frozen=True)
class Queries:
    subject: str
    known: str = ""
    concern: str = ""


def is_testing(analysis: Analysis) -> bool:
    """Whether the task writes or fixes tests: by its type, or the phase it is in."""
    return (analysis.task.task_type.strip().casefold() in TESTING_TYPES
            or analysis.phase is Phase.TEST)


def concern_of(analysis: Analysis) -> str:
    if is_testing(analysis):
        return CONCERNS["testing"]
    concern = CONCERNS[analysis.task_type]
    if analysis.is_refinement and analysis.task_type is not TaskType.REFINEMENT:
        concern = f"{concern} {CONCERNS[TaskType.REFINEMENT]}".strip()
    return concern


def subject_of(analysis: Analysis) -> str:
    """The topic without the words of the task type's concerns ("tests for the refund service"
    is about the refund service; that it is a testing task is the concern query's job)."""
    concern = set(concern_of(analysis).split())
    words = topic(analysis.task.description).split()
    kept = [w for w in words if _fold(w) not in concern]
    return " ".join(kept) or topic(analysis.task.description)


def _fold(word: str) -> str:
    return "".join(_WORD.findall(word.casefold()))


async def project_files(
    store: MemoryBackend, analysis: Analysis, subject: str, groups: Sequence[str]
) -> list[str]:
    """The paths and descriptions of the files the project's codebase discoveries link to the
    subject: "refund webhook" finds ``app/api/webhooks.py`` ("Stripe webhook endpoint: ...
    enqueues the event") and ``app/workers/stripe_events.py`` ("Celery tasks ..."), so the
    webhook task's context also reaches what the project knows about Stripe events and Celery."""
    hits = await store.search(subject, group_ids=groups, kinds=[CODEBASE_DISCOVERY],
                              limit=KNOWN_FILES)
    if not hits:
        return []
    best = hits[0].score
    return [_file_text(hit.episode) for hit in hits if hit.score >= KNOWN_RELATIVE * best]


def _file_text(episode: Episode) -> str:
    """A discovery's path and what it says the file is for (not its bookkeeping fields)."""
    data = episode.data
    about = data.get("description", "") if isinstance(data, dict) else episode.body
    return f"{episode.name} {about if isinstance(about, str) else ''}"


ENTITY_LABELS = frozenset({"File", "Module", "Component"})
# Memories whose entities speak for the task: one note each (a session's insights name every
# file it touched, most of them beside the point).
ENTITY_KINDS = (PATTERN, GOTCHA, FAILED_APPROACH, CODEBASE_DISCOVERY, RECOMMENDATION,
                TASK_OUTCOME)
ENTITY_SOURCES = 3  # best memories whose entities join the "known" query ...
ENTITY_RELATIVE = 0.5  # ... when they score at least this share of the best


async def named_entities(
    store: MemoryBackend, analysis: Analysis, subject: str, groups: Sequence[str]
) -> list[str]:
    """The files, modules and components the task names, and those named by the memories that
    match its subject best: "tests for the refund service" finds "External payment calls go
    through app/clients/stripe_client.py" (with ``StripeStub`` and ``tests/conftest.py``), and
    with them what else the project records about those."""
    names = [name for label, name in text_entities(analysis.task.description)
             if label in ENTITY_LABELS]
    hits = await store.search(subject, group_ids=groups, kinds=ENTITY_KINDS,
                              limit=ENTITY_SOURCES)
    for hit in hits:
        if hit.score >= ENTITY_RELATIVE * hits[0].score:
            names += [e.name for e in extract(hit.episode).entities if e.label in ENTITY_LABELS]
    return names


DEFAULT_EXPANDERS: tuple[Expander, ...] = (project_files, named_entities)


async def known_words(
    store: MemoryBackend,
    analysis: Analysis,
    subject: str,
    groups: Sequence[str],
    expanders: Sequence[Expander],
) -> str:
    """What every expander links to the subject, as one query; words of the subject left out
    (the subject query already weighs them). Split at spaces only, so that a path or a dotted
    name stays whole: the search then names its entity outright."""
    found = await asyncio.gather(*(
        expand(store, analysis, subject, groups) for expand in expanders
    ))
    own = {_fold(w) for w in subject.split()}
    words = dict.fromkeys(
        w for texts in found for text in texts for w in text.split()
        if (folded := _fold(w)) and folded not in own and not folded.isdigit()
    )
    return " ".join(words)
