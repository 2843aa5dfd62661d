"""What the project's memory lacks, and the questions that fill it (000's
``KnowledgeGapAnalyzer`` and ``InteractiveCaptureSession``, FEAT-GR-004).

A category is a gap when memory holds nothing of it: no memory of its kind (an architecture
note, a domain term, a decision) and no captured answer. Each gap comes with the questions a
person answers, most important first. An answer is stored in the project's group: as the
category's own kind where one exists (``architecture``, ``domain_knowledge``,
``project_overview``), so context assembly finds it where it looks; else as
``captured_knowledge``. Its body is 000's ``CapturedKnowledge`` (category, question, answer,
the facts taken from it, confidence, when it was captured). Answering the same question again
replaces the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from backends.errors import InvalidEpisode
from backends.model import Episode, now
from backends.protocol import MemoryBackend
from memory.agent.records import ReadsAsMapping, title
from memory.agent.scopes import (
    ADR,
    ARCHITECTURE,
    CAPTURED_KNOWLEDGE,
    DOMAIN_KNOWLEDGE,
    PROJECT_OVERVIEW,
    project_group,
)

SOURCE = "interactive_capture"


class KnowledgeCategory(StrEnum):
    PROJECT_OVERVIEW = "project_overview"
    ARCHITECTURE = "architecture"
    DOMAIN = "domain"
    CONSTRAINTS = "constraints"
    DECISIONS = "decisions"
    GOALS = "goals"
    ROLE_CUSTOMIZATION = "role_customization"
    QUALITY_GATES = "quality_gates"
    WORKFLOW_PREFERENCES = "workflow_preferences"


C = KnowledgeCategory
STORED_AS = {C.PROJECT_OVERVIEW: PROJECT_OVERVIEW, C.ARCHITECTURE: ARCHITECTURE,
             C.DOMAIN: DOMAIN_KNOWLEDGE}
"""the kind an answer is stored as, where the category has one (else ``captured_knowledge``)"""
FILLED_BY = STORED_AS | {C.DECISIONS: ADR}
"""the kind whose memories fill a category besides captured answers"""
IMPORTANCE = ("high", "medium", "low")

# (category, importance, question, why it matters, an example answer)
QUESTIONS: tuple[tuple[KnowledgeCategory, str, str, str, str], ...] = (
    (C.PROJECT_OVERVIEW, "high", "What does this project do, and for whom?",
     "Every session starts from the project's purpose.", "A CLI that syncs notes to S3"),
    (C.ARCHITECTURE, "high", "What are the main parts of the system and how do they connect?",
     "Changes that ignore the structure break it.", "api/ calls core/; core/ owns the DB"),
    (C.CONSTRAINTS, "high", "What must never happen (security, compliance, compatibility)?",
     "Hard limits are not visible in the code.", "Never log personal data"),
    (C.DECISIONS, "high", "Which technical decisions are settled and must not be revisited?",
     "Agents reopen settled questions without them.", "PostgreSQL, not MongoDB"),
    (C.DOMAIN, "medium", "Which domain terms does the code use, and what do they mean?",
     "Names in the code assume knowledge of the domain.", "A 'payout' is a transfer to a seller"),
    (C.GOALS, "medium", "What is the project working towards now?",
     "Priorities decide between two good options.", "Ship the public API by March"),
    (C.QUALITY_GATES, "medium", "Which quality bar does this project hold (coverage, review)?",
     "The defaults may be too strict or too loose here.", "90% coverage on core/"),
    (C.ROLE_CUSTOMIZATION, "low", "What must the player or the coach do differently here?",
     "Roles can take project-specific duties.", "The coach checks the changelog"),
    (C.WORKFLOW_PREFERENCES, "low", "How do you prefer work to be done (mode, size of changes)?",
     "Work that fits the team's habits is accepted sooner.", "Small PRs, one task each"),
)


@dataclass(frozen=True)
class KnowledgeGap(ReadsAsMapping):
    category: KnowledgeCategory
    question: str
    importance: str
    context: str
    example_answer: str | None = None


class CapturedKnowledge(ReadsAsMapping, BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    category: KnowledgeCategory
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    extracted_facts: tuple[str, ...] = ()
    confidence: float = Field(default=1.0, ge=0, le=1)
    captured_at: datetime | None = None


async def _filled(store: MemoryBackend, project_id: str) -> set[KnowledgeCategory]:
    group = project_group(project_id)
    filled = {category for category, kind in FILLED_BY.items()
              if await store.count(group_ids=[group], kinds=[kind])}
    async for episode in store.scan(group_ids=[group], kinds=[CAPTURED_KNOWLEDGE]):
        data = episode.data
        if isinstance(data, dict) and data.get("category") in set(C):
            filled.add(C(data["category"]))
    return filled


async def analyze_gaps(
    store: MemoryBackend,
    project_id: str,
    focus: KnowledgeCategory | str | None = None,
    max_questions: int = 10,
) -> list[KnowledgeGap]:
    """000's ``analyze_gaps``: the questions of the categories memory holds nothing of (of
    ``focus`` alone, when given), high importance first."""
    wanted = None if focus is None else KnowledgeCategory(focus)
    filled = await _filled(store, project_id)
    gaps = [KnowledgeGap(category, question, importance, why, example)
            for category, importance, question, why, example in QUESTIONS
            if category not in filled and wanted in (None, category)]
    gaps.sort(key=lambda gap: IMPORTANCE.index(gap.importance))
    return gaps[: max(max_questions, 0)]


def facts(category: KnowledgeCategory, answer: str) -> tuple[str, ...]:
    """The answer's sentences, each prefixed with its category (000: "facts extracted and
    prefixed with category context")."""
    label = category.value.replace("_", " ")
    parts = [p.strip() for p in re.split(r"(?<=[.!?])\s+|\n+", answer) if p.strip()]
    return tuple(f"[{label}] {part}" for part in parts)


async def capture_knowledge(
    store: MemoryBackend, project_id: str, category: KnowledgeCategory | str, question: str,
    answer: str,
) -> CapturedKnowledge:
    """Store a person's ``answer`` to ``question`` (see the module docstring)."""
    if not answer.strip() or not question.strip():
        raise InvalidEpisode("a captured answer needs its question and an answer")
    try:
        kind_of = KnowledgeCategory(category)
    except ValueError:
        known = ", ".join(c.value for c in C)
        raise InvalidEpisode(f"no knowledge category {category!r}; categories: {known}") from None
    record = CapturedKnowledge(category=kind_of, question=question.strip(),
                               answer=answer.strip(), extracted_facts=facts(kind_of, answer),
                               captured_at=now())
    await store.upsert(Episode.create(
        group_id=project_group(project_id), kind=STORED_AS.get(kind_of, CAPTURED_KNOWLEDGE),
        name=title(f"{kind_of.value}: {record.question}"),
        body=record.model_dump(mode="json"), key=f"captured:{kind_of.value}:{record.question}",
        source=SOURCE,
    ))
    return record


UiCallback = Callable[..., Any]


class InteractiveCaptureSession:
    """000's interactive capture: asks the gaps' questions through ``ui_callback`` (events
    ``intro``, ``question``, ``get_input``, ``captured``, ``summary``) and stores each answer.
    An empty answer skips the question."""

    def __init__(self, store: MemoryBackend, project_id: str) -> None:
        self.store = store
        self.project_id = project_id

    async def run_session(
        self, focus: KnowledgeCategory | str | None = None, max_questions: int = 10,
        ui_callback: UiCallback | None = None,
    ) -> list[CapturedKnowledge]:
        ui = ui_callback or (lambda event, data=None: None)
        gaps = await analyze_gaps(self.store, self.project_id, focus, max_questions)
        ui("intro", f"{len(gaps)} question(s) about what this project's memory lacks; "
                    "an empty answer skips one.")
        captured = []
        for number, gap in enumerate(gaps, 1):
            ui("question", {"number": number, "total": len(gaps), "category": gap.category.value,
                            "question": gap.question, "context": gap.context})
            answer = ui("get_input") or ""
            if isinstance(answer, str) and answer.strip():
                record = await capture_knowledge(self.store, self.project_id, gap.category,
                                                 gap.question, answer)
                captured.append(record)
                ui("captured", record)
        ui("summary", f"captured {len(captured)} of {len(gaps)}")
        return captured

    async def run_abbreviated(
        self, questions: Sequence[str], task_context: dict[str, Any] | None = None,
        ui_callback: UiCallback | None = None,
    ) -> dict[str, Any]:
        """Pre-defined questions (after a review, say), asked through ``ui_callback``; an
        architectural review's answers are ``decisions``, others ``goals``."""
        ui = ui_callback or (lambda event, data=None: None)
        review = (task_context or {}).get("review_mode")
        category = C.DECISIONS if review == "architectural" else C.GOALS
        captured = []
        for number, question in enumerate(questions, 1):
            ui("question", {"number": number, "total": len(questions),
                            "category": category.value, "question": question, "context": ""})
            answer = ui("get_input") or ""
            if isinstance(answer, str) and answer.strip():
                captured.append(await capture_knowledge(
                    self.store, self.project_id, category, question, answer))
        return {"task_context": dict(task_context or {}), "asked": len(questions),
                "captured": [record.model_dump(mode="json") for record in captured]}
