"""Architecture decision records and failed approaches of a project.

An ADR is keyed by its id (``ADR-007``). Superseding one records the new ADR and marks the old
one ``superseded`` with ``superseded_by``, and ends its validity (``invalid_at``, on the record
and on the episode, so both layers' time filters see it). Deprecating ends it without a
successor. A failed approach is keyed by its text: recording it again counts a repeat.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from backends.errors import DualmemError
from backends.model import Episode, natural_key, now
from backends.protocol import MemoryBackend
from memory.agent.records import fetch, scan_records, title
from memory.agent.scopes import ADR, FAILED_APPROACH, project_group

AdrStatus = Literal["proposed", "accepted", "superseded", "deprecated"]
Severity = Literal["low", "medium", "high", "critical"]
_SEVERITY_ORDER: tuple[Severity, ...] = ("low", "medium", "high", "critical")


class DecisionError(DualmemError, LookupError):
    """The ADR to supersede or deprecate does not exist, or is no longer in force."""


class Adr(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    adr_id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    decision: str
    context: str = ""
    consequences: tuple[str, ...] = ()
    status: AdrStatus = "accepted"
    supersedes: str | None = None
    superseded_by: str | None = None
    deprecation_reason: str | None = None
    invalid_at: datetime | None = None

    @property
    def in_force(self) -> bool:
        return self.invalid_at is None


class FailedApproach(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    approach: str = Field(min_length=1)
    symptom: str
    root_cause: str = ""
    prevention: str = ""
    severity: Severity = "medium"
    occurrence_count: int = Field(default=1, ge=1)
    first_seen: datetime
    last_seen: datetime
    spec: str | None = None
    """the Auto-Claude spec it was imported from (``migrate.insights``)"""
    session: int | None = None
    """the session it failed in, for one imported from a session's ``what_failed``"""


async def _put_adr(
    store: MemoryBackend, project_id: str, adr: Adr, created: datetime | None
) -> Adr:
    fields = {"created_at": created} if created is not None else {}
    await store.upsert(
        Episode.create(
            group_id=project_group(project_id), kind=ADR, name=title(f"{adr.adr_id}: {adr.title}"),
            body=adr.model_dump(mode="json"), key=adr.adr_id, source="decision",
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
    ended = adr.model_copy(
        update={"status": "deprecated", "deprecation_reason": reason, "invalid_at": now()}
    )
    return await _put_adr(store, project_id, ended, episode.created_at)


async def record_failed_approach(
    store: MemoryBackend,
    project_id: str,
    approach: str,
    *,
    symptom: str,
    root_cause: str = "",
    prevention: str = "",
    severity: Severity = "medium",
) -> FailedApproach:
    """Record that ``approach`` failed. A repeat (same text, any case or spacing) increments
    ``occurrence_count``, keeps the worst severity, and takes the newest non-empty details."""
    group = project_group(project_id)
    key = natural_key(approach)
    found = await fetch(store, group, FAILED_APPROACH, key, FailedApproach)
    seen = now()
    record = FailedApproach(
        approach=approach, symptom=symptom, root_cause=root_cause, prevention=prevention,
        severity=severity, first_seen=seen, last_seen=seen,
    )
    if found is not None:
        old = found[1]
        record = record.model_copy(update={
            "symptom": symptom or old.symptom,
            "root_cause": root_cause or old.root_cause,
            "prevention": prevention or old.prevention,
            "severity": max(severity, old.severity, key=_SEVERITY_ORDER.index),
            "occurrence_count": old.occurrence_count + 1,
            "first_seen": old.first_seen,
        })
    await store.upsert(
        Episode.create(
            group_id=group, kind=FAILED_APPROACH, name=title(f"Failed: {approach}"),
            body=record.model_dump(mode="json", exclude_none=True), key=key, source="decision",
            created_at=record.first_seen,
        )
    )
    return record


async def list_failed_approaches(store: MemoryBackend, project_id: str) -> list[FailedApproach]:
    """The project's failed approaches, most repeated first."""
    found = [
        record
        async for episode in store.scan(group_ids=[project_group(project_id)],
                                        kinds=[FAILED_APPROACH])
        if (record := _failed_approach(episode)) is not None
    ]
    return sorted(found, key=lambda r: -r.occurrence_count)


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
