"""Architecture decision records and failed approaches of a project, in the shapes of
GuardKit's ``ADREntity`` and ``FailedApproachEpisode`` (docs/architecture/graphiti-architecture.md,
TASK-GE-004), which are accepted as written.

An ADR is keyed by its id (``ADR-007``). Superseding one records the new ADR and marks the old
one ``superseded`` with ``superseded_by``, and ends its validity (``invalid_at``, on the record
and on the episode, so both layers' time filters see it). Deprecating ends it without a
successor. ``search_adrs`` serves only ADRs in force unless asked for another status.

A failed approach is keyed by its text: recording it again counts a repeat. It gets a
``FAIL-NNN`` id when first recorded (or keeps the one it was given, ``FAIL-SUBPROCESS``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from backends.errors import DualmemError, InvalidEpisode
from backends.model import Episode, natural_key, now, problems, stable_id
from backends.protocol import MemoryBackend
from memory.agent.records import (
    ReadsAsMapping,
    body,
    fetch,
    folded,
    next_id,
    parse,
    scan_records,
    title,
    without_entity_type,
)
from memory.agent.scopes import ADR, FAILED_APPROACH, project_group


def _trigger(value: Any) -> Any:
    value = folded(value)
    return "implementation" if value == "implementation_choice" else value


AdrStatus = Annotated[
    Literal["proposed", "accepted", "superseded", "deprecated"], BeforeValidator(folded)
]
AdrTrigger = Annotated[
    Literal[
        "manual", "clarifying_question", "task_review", "architecture_review",
        "decision_checkpoint", "implementation", "discovered",
    ],
    BeforeValidator(_trigger),
]
"""The design's five triggers, and the two GuardKit's code adds (an implementation choice, a
decision discovered in the code)."""
Severity = Annotated[Literal["low", "medium", "high", "critical"], BeforeValidator(folded)]
SeverityName = Literal["low", "medium", "high", "critical"]
_SEVERITY_ORDER: tuple[SeverityName, ...] = ("low", "medium", "high", "critical")
Strings = tuple[str, ...]
# Stored always (our earlier bodies); the design's other fields only when given.
_ADR_ALWAYS = frozenset({"adr_id", "title", "decision", "context", "consequences", "status",
                         "supersedes", "superseded_by", "deprecation_reason", "invalid_at"})
_FAILED_ALWAYS = frozenset({"approach", "symptom", "root_cause", "prevention", "severity",
                            "occurrence_count", "first_seen", "last_seen"})


class DecisionError(DualmemError, LookupError):
    """The ADR to supersede or deprecate does not exist, or is no longer in force."""


class Adr(ReadsAsMapping, BaseModel):
    """An architecture decision record: every field of the design's ``ADREntity`` (``id`` is
    read as ``adr_id``), plus ours: why it was deprecated, and when it stopped being valid."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    adr_id: str = Field(min_length=1, validation_alias=AliasChoices("adr_id", "id"))
    title: str = Field(min_length=1)
    decision: str = ""
    context: str = ""
    rationale: str = ""
    alternatives_considered: Strings = ()
    consequences: Strings = ()
    status: AdrStatus = "accepted"
    trigger: AdrTrigger = "manual"
    source_task_id: str | None = None
    source_feature_id: str | None = None
    source_command: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    related_adrs: Strings = ()
    tags: Strings = ()
    violation_symptoms: Strings = ()
    """what a session breaking the decision looks like (000's ``load_critical_adrs``)"""
    confidence: float = Field(default=1.0, ge=0, le=1)
    created_at: datetime | None = None
    decided_at: datetime | None = None
    deprecated_at: datetime | None = None
    deprecation_reason: str | None = None
    invalid_at: datetime | None = None

    @model_validator(mode="before")
    @classmethod
    def _design_body(cls, data: Any) -> Any:
        return without_entity_type(data, ADR)

    @property
    def id(self) -> str:
        """The design's name for ``adr_id``."""
        return self.adr_id

    @property
    def in_force(self) -> bool:
        return self.invalid_at is None and self.status in ("proposed", "accepted")


class FailedApproach(ReadsAsMapping, BaseModel):
    """An approach that failed: every field of the design's ``FailedApproachEpisode``
    (``occurrences``, ``first_occurred`` and ``last_occurred`` are read as ours)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = ""
    """``FAIL-NNN`` (or the id it was given); empty on records written before ids"""
    approach: str = Field(min_length=1)
    symptom: str
    root_cause: str = ""
    fix_applied: str = ""
    prevention: str = ""
    context: str = ""
    """where it happened (feature-build, task-work, ...)"""
    task_id: str | None = None
    feature_id: str | None = None
    file_path: str | None = None
    related_adrs: Strings = ()
    similar_failures: Strings = ()
    severity: Severity = "medium"
    time_to_fix_minutes: int | None = Field(default=None, ge=0)
    occurrence_count: int = Field(
        default=1, ge=1, validation_alias=AliasChoices("occurrence_count", "occurrences")
    )
    first_seen: datetime = Field(
        default_factory=now, validation_alias=AliasChoices("first_seen", "first_occurred")
    )
    last_seen: datetime = Field(
        default_factory=now, validation_alias=AliasChoices("last_seen", "last_occurred")
    )

    @model_validator(mode="before")
    @classmethod
    def _design_body(cls, data: Any) -> Any:
        return without_entity_type(data, FAILED_APPROACH)
    spec: str | None = None
    """the Auto-Claude spec it was imported from (``backends.insights``)"""
    session: int | None = None
    """the session it failed in, for one imported from a session's ``what_failed``"""


async def _put_adr(
    store: MemoryBackend, project_id: str, adr: Adr, created: datetime | None
) -> Adr:
    fields = {"created_at": created} if created is not None else {}
    await store.upsert(
        Episode.create(
            group_id=project_group(project_id), kind=ADR, name=title(f"{adr.adr_id}: {adr.title}"),
            body=body(adr, _ADR_ALWAYS), key=adr.adr_id, source="decision",
            invalid_at=adr.invalid_at, **fields,
        )
    )
    return adr


async def get_adr(store: MemoryBackend, project_id: str, adr_id: str) -> Adr | None:
    found = await fetch(store, project_group(project_id), ADR, adr_id, Adr)
    return None if found is None else found[1]


async def list_adrs(
    store: MemoryBackend, project_id: str, *, in_force_only: bool = False
) -> list[Adr]:
    """The project's ADRs in the order they were first recorded."""
    adrs = [adr for _, adr in await scan_records(store, [project_group(project_id)], ADR, Adr)]
    return [adr for adr in adrs if adr.in_force or not in_force_only]


async def load_critical_adrs(
    store: MemoryBackend, project_id: str, limit: int = 10
) -> list[Adr]:
    """000's ``load_critical_adrs``: the ADRs in force (each readable as a dict: ``adr["id"]``,
    ``adr.get("violation_symptoms", [])``), newest first."""
    return (await list_adrs(store, project_id, in_force_only=True))[::-1][: max(limit, 0)]


async def record_adr(store: MemoryBackend, project_id: str, adr: Adr) -> Adr:
    """Store ``adr`` (replacing an earlier record of the same id, keeping its first time)."""
    found = await fetch(store, project_group(project_id), ADR, adr.adr_id, Adr)
    return await _put_adr(store, project_id, adr, found[0].created_at if found else None)


async def _in_force(store: MemoryBackend, project_id: str, adr_id: str) -> tuple[Episode, Adr]:
    found = await fetch(store, project_group(project_id), ADR, adr_id, Adr)
    if found is None:
        raise DecisionError(f"no ADR {adr_id!r} in project {project_id!r}")
    if not found[1].in_force:
        raise DecisionError(f"ADR {adr_id!r} is already {found[1].status}")
    return found


async def supersede_adr(store: MemoryBackend, project_id: str, old_id: str, new: Adr) -> Adr:
    """Record ``new`` as the successor of ``old_id``; returns the new ADR."""
    episode, old = await _in_force(store, project_id, old_id)
    new = new.model_copy(update={"supersedes": old_id})
    await record_adr(store, project_id, new)
    ended = old.model_copy(
        update={"status": "superseded", "superseded_by": new.adr_id, "invalid_at": now()}
    )
    await _put_adr(store, project_id, ended, episode.created_at)
    return new


async def deprecate_adr(store: MemoryBackend, project_id: str, adr_id: str, reason: str) -> Adr:
    """End ``adr_id`` without a successor; returns it as it now stands."""
    episode, adr = await _in_force(store, project_id, adr_id)
    when = now()
    ended = adr.model_copy(update={
        "status": "deprecated", "deprecation_reason": reason, "invalid_at": when,
        "deprecated_at": when,
    })
    return await _put_adr(store, project_id, ended, episode.created_at)


async def search_adrs(
    store: MemoryBackend,
    project_id: str,
    query: str,
    *,
    status: AdrStatus | Literal["any"] | None = None,
    limit: int = 10,
) -> list[Adr]:
    """The project's ADRs matching ``query``, best first. Only those in force unless
    ``status`` asks for one status (``superseded``, ...) or ``"any"``: a superseded decision
    is never served as current by default."""
    group = project_group(project_id)
    wanted = folded(status)
    every = await store.count(group_ids=[group], kinds=[ADR])  # rank them all, then filter
    hits = await store.search(query, group_ids=[group], kinds=[ADR], limit=max(every, 1))
    found = [adr for hit in hits if (adr := parse(hit.episode, Adr)) is not None]
    if wanted is None:
        found = [adr for adr in found if adr.in_force]
    elif wanted != "any":
        found = [adr for adr in found if adr.status == wanted]
    return found[: max(limit, 0)]


async def next_adr_id(store: MemoryBackend, project_id: str) -> str:
    """``ADR-NNNN``, one past the project's highest."""
    return next_id("ADR", [adr.adr_id for adr in await list_adrs(store, project_id)], 4)


async def record_decision(
    store: MemoryBackend,
    project_id: str,
    question: str,
    answer: str,
    trigger: str,
    **fields: Any,
) -> str:
    """Record the answer to a question as an accepted ADR with the next ``ADR-NNNN`` id, and
    return that id. ``trigger`` is one of the design's (``clarifying_question``, ...);
    ``fields`` are any other ADR fields (``source_task_id``, ``rationale``, ``tags``, ...).

    Two processes recording a decision at the same instant may pick the same number; the
    later write then replaces the earlier (docs/CONFORMANCE.md)."""
    try:
        adr = Adr.model_validate({
            "context": f"Question: {question}", **fields,
            "adr_id": await next_adr_id(store, project_id),
            "title": title(question), "decision": answer, "trigger": trigger,
        })
    except ValidationError as exc:
        raise InvalidEpisode(f"not a decision: {problems(exc)}") from None
    return (await record_adr(store, project_id, adr)).adr_id


async def record_failed_approach(
    store: MemoryBackend,
    project_id: str,
    approach: str,
    *,
    symptom: str,
    root_cause: str = "",
    prevention: str = "",
    severity: SeverityName = "medium",
    **details: Any,
) -> FailedApproach:
    """Record that ``approach`` failed; ``details`` are the design's other fields
    (``fix_applied``, ``context``, ``related_adrs``, ``task_id``, ``id``, ...). A repeat (same
    text, any case or spacing) increments ``occurrence_count``, keeps the first id and the
    worst severity, adds related ADRs, and takes the newest non-empty details."""
    try:
        record = FailedApproach.model_validate({
            **details, "approach": approach, "symptom": symptom, "root_cause": root_cause,
            "prevention": prevention, "severity": severity,
        })
    except ValidationError as exc:
        raise InvalidEpisode(f"not a failed approach: {problems(exc)}") from None
    return await _put_failed_approach(store, project_id, record, repeat=True)


async def capture_failed_approach(
    store: MemoryBackend, project_id: str, episode: Mapping[str, Any]
) -> FailedApproach:
    """Store a failed approach given as the design's episode body, as written (its id,
    occurrence count and times are kept). Recording the same approach again replaces it."""
    try:
        record = FailedApproach.model_validate(dict(episode))
    except ValidationError as exc:
        raise InvalidEpisode(f"not a failed approach: {problems(exc)}") from None
    return await _put_failed_approach(store, project_id, record, repeat=False)


async def _put_failed_approach(
    store: MemoryBackend, project_id: str, record: FailedApproach, *, repeat: bool
) -> FailedApproach:
    group = project_group(project_id)
    key = natural_key(record.approach)
    stored = await store.get(stable_id(group, FAILED_APPROACH, key))
    found = None if stored is None else _failed_approach(stored)
    if found is not None and repeat:
        record = _repeated(found, record)
    if not record.id:
        kept = found.id if found is not None else ""
        record = record.model_copy(update={"id": kept or await _next_failure_id(store, group)})
    await store.upsert(
        Episode.create(
            group_id=group, kind=FAILED_APPROACH, name=title(f"{record.id}: {record.approach}"),
            body=body(record, _FAILED_ALWAYS), key=key, source="decision",
            created_at=record.first_seen,
        )
    )
    return record


def _repeated(old: FailedApproach, new: FailedApproach) -> FailedApproach:
    """``new`` as a repeat of ``old``: counted, and nothing ``old`` knew is lost."""
    given = {name for name in new.model_fields_set if getattr(new, name) not in ("", None, ())}
    merged = old.model_dump() | new.model_dump(include=given)
    return FailedApproach.model_validate(merged | {
        "id": old.id or new.id,
        "severity": max(new.severity, old.severity, key=_SEVERITY_ORDER.index),
        "related_adrs": _union(old.related_adrs, new.related_adrs),
        "similar_failures": _union(old.similar_failures, new.similar_failures),
        "occurrence_count": old.occurrence_count + 1,
        "first_seen": old.first_seen,
        "last_seen": now(),
    })


def _union(*lists: Sequence[str]) -> Strings:
    return tuple(dict.fromkeys(item for items in lists for item in items))


async def _next_failure_id(store: MemoryBackend, group: str) -> str:
    taken = [episode.data.get("id", "") async for episode in
             store.scan(group_ids=[group], kinds=[FAILED_APPROACH])
             if isinstance(episode.data, dict)]
    return next_id("FAIL", (str(t) for t in taken), 3)


async def list_failed_approaches(store: MemoryBackend, project_id: str) -> list[FailedApproach]:
    """The project's failed approaches, most repeated first."""
    found = [
        record
        async for episode in store.scan(group_ids=[project_group(project_id)],
                                        kinds=[FAILED_APPROACH])
        if (record := _failed_approach(episode)) is not None
    ]
    return sorted(found, key=lambda r: -r.occurrence_count)


async def load_failed_approaches(
    store: MemoryBackend, project_id: str, query: str, limit: int = 5
) -> list[FailedApproach]:
    """The failed approaches relevant to ``query`` (what is about to be tried), best first:
    each says its symptom, how to prevent it, and which ADRs to check."""
    hits = await store.search(
        query, group_ids=[project_group(project_id)], kinds=[FAILED_APPROACH], limit=limit
    )
    return [record for hit in hits if (record := _failed_approach(hit.episode)) is not None]


def _failed_approach(episode: Episode) -> FailedApproach | None:
    """The record a failed approach's episode holds; one split from a session (which records
    no times of its own) was first and last seen when the episode was."""
    data = episode.data
    if not isinstance(data, dict):
        return None
    seen = episode.created_at
    try:
        return FailedApproach.model_validate({"first_seen": seen, "last_seen": seen, **data})
    except ValidationError:
        return None
