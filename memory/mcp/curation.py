"""The MCP tools that correct memory: thin wrappers over ``memory.curation`` (the CLI calls the
same operations), typed and described for the agent."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, Field

from backends.model import Episode
from memory.agent.decisions import Adr, next_adr_id
from memory.curation.operations import Curator

MemoryId = Annotated[str, Field(
    description="The memory's id, or a unique prefix of it (as search_memories and "
    "list_memories show it).")]
Reason = Annotated[str, Field(description="Why, in a few words (kept in its history).")]


class Memory(BaseModel):
    id: str
    group_id: str
    kind: str
    name: str
    text: str = Field(description="The memory's body, whole.")
    source: str
    created_at: datetime
    valid_at: datetime | None
    invalid_at: datetime | None = Field(description="Set when it stopped being true.")


class Change(BaseModel):
    change: str = Field(description="updated, forgotten, restored or merged.")
    at: datetime
    reason: str
    before: Memory = Field(description="The memory as it was before this change.")


class MemoryHistory(BaseModel):
    id: str
    current: Memory | None = Field(description="As it stands; null when it is forgotten.")
    changes: list[Change] = Field(description="Its earlier versions, oldest first.")
    retired_facts: list[dict[str, Any]] = Field(
        description="Facts of the knowledge graph that its rewrites retired.")
    superseded_by: str | None = Field(description="A decision's successor.")


class Decision(BaseModel):
    adr_id: str
    title: str
    status: str
    superseded_by: str | None
    invalid_at: datetime | None


class Entity(BaseModel):
    uuid: str
    name: str
    label: str = Field(description="What it is: File, Component, Decision, Task, ...")
    group_id: str
    summary: str


class Fact(BaseModel):
    uuid: str
    name: str = Field(description="The relation: GOVERNS, FAILED_ON, SUPERSEDES, ...")
    fact: str
    group_id: str
    source: str
    target: str
    valid_at: datetime | None
    invalid_at: datetime | None = Field(description="When it stopped being true.")
    expired_at: datetime | None = Field(description="When a rewrite of its memory retired it.")
    episodes: list[str] = Field(description="The memories that state it.")


class Entities(BaseModel):
    entities: list[Entity]
    reason: str = Field(description="Why nothing could be searched, when so.")


class Facts(BaseModel):
    facts: list[Fact]
    reason: str = Field(description="Why nothing could be searched, when so.")


Query = Annotated[str, Field(description="Words of a name or a fact (typos are tolerated); "
                             "empty: every one.")]
Limit = Annotated[int, Field(ge=1, le=200, description="At most this many.")]


def _memory(episode: Episode) -> Memory:
    return Memory(id=episode.id, group_id=episode.group_id, kind=episode.kind, name=episode.name,
                  text=episode.body, source=episode.source, created_at=episode.created_at,
                  valid_at=episode.valid_at, invalid_at=episode.invalid_at)


def _decision(adr: Adr) -> Decision:
    return Decision(adr_id=adr.adr_id, title=adr.title, status=adr.status,
                    superseded_by=adr.superseded_by, invalid_at=adr.invalid_at)


class CurationTools:
    """Find, correct, forget and bring back this project's memories; end decisions."""

    def __init__(self, curator: Curator) -> None:
        self.curator = curator

    async def get_memory(self, id: MemoryId) -> Memory:
        """One memory, whole."""
        return _memory(await self.curator.get(id))

    async def list_memories(
        self,
        kinds: Annotated[list[str] | None, Field(
            description="Only these kinds (gotcha, pattern, codebase_discovery, task_outcome, "
            "adr, ...); default: every kind.")] = None,
        spec: Annotated[str | None, Field(description="Only this spec's memories.")] = None,
        since: Annotated[datetime | None, Field(
            description="Only memories created at this time or later (ISO 8601).")] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many.")] = 50,
    ) -> list[Memory]:
        """This project's memories, newest first (no search: every one that fits)."""
        found = await self.curator.list(kinds=kinds or None, spec=spec, since=since,
                                        limit=limit)
        return [_memory(episode) for episode in found]

    async def update_memory(
        self,
        id: MemoryId,
        text: Annotated[str | None, Field(description="Its new text (default: unchanged).")]
        = None,
        name: Annotated[str | None, Field(description="Its new title (default: unchanged).")]
        = None,
        reason: Reason = "",
    ) -> Memory:
        """Correct a memory in place: same id, the earlier version kept in its history."""
        return _memory(await self.curator.update(id, body=text, name=name, reason=reason))

    async def forget_memory(self, id: MemoryId, reason: Reason) -> Memory:
        """Forget a wrong or stale memory: it is no longer found or shown, and its text is
        kept in its history, so a person can restore it. Returns it as it was."""
        return _memory(await self.curator.forget(id, reason))

    async def memory_history(self, id: MemoryId) -> MemoryHistory:
        """What became of a memory (a forgotten one too): its earlier versions, the facts its
        rewrites retired, and a decision's successor."""
        found = await self.curator.history(id)
        return MemoryHistory(
            id=found.id, current=None if found.current is None else _memory(found.current),
            changes=[Change(change=v.change, at=v.at, reason=v.reason, before=_memory(v.episode))
                     for v in found.versions],
            retired_facts=[fact.to_json() for fact in found.retired_facts],
            superseded_by=found.superseded_by)

    async def supersede_decision(
        self,
        decision: Annotated[str, Field(
            description="The decision in force to supersede: its ADR id (ADR-007), or its "
            "memory's id or a unique prefix of it.")],
        title: Annotated[str, Field(description="The new decision's title.")],
        text: Annotated[str, Field(description="What is decided now.")],
        decision_id: Annotated[str | None, Field(
            description="The new decision's ADR id (default: the next ADR-NNNN).")] = None,
    ) -> Decision:
        """Replace a decision in force by a new one; the old one is marked superseded and
        no longer served as in force."""
        new = Adr(adr_id=decision_id or await next_adr_id(self.curator.store,
                                                          self.curator.project_id),
                  title=title, decision=text)
        return _decision(await self.curator.supersede_decision(decision, new))

    async def deprecate_decision(
        self,
        decision: Annotated[str, Field(
            description="The decision in force to end: its ADR id, or its memory's id or a "
            "unique prefix of it.")],
        reason: Reason = "",
    ) -> Decision:
        """End a decision in force without a successor."""
        return _decision(await self.curator.deprecate_decision(decision, reason))

    async def search_entities(self, query: Query = "", limit: Limit = 20) -> Entities:
        """The knowledge graph's entities (files, components, decisions, tasks, ...) of this
        project that the query names."""
        found = await self.curator.entities(query, limit)
        return Entities(entities=[Entity.model_validate(item, from_attributes=True)
                                  for item in found.items], reason=found.reason)

    async def search_facts(
        self, query: Query = "", limit: Limit = 20,
        retired: Annotated[bool, Field(
            description="Include facts no longer true (superseded, retired).")] = False,
    ) -> Facts:
        """The knowledge graph's facts between entities (a decision governs a component, a
        task failed on a file, ...) that the query names, with when each held."""
        found = await self.curator.facts(query, limit, retired=retired)
        return Facts(facts=[Fact.model_validate(item, from_attributes=True)
                            for item in found.items], reason=found.reason)

    def tools(self) -> Sequence[Any]:
        return (self.get_memory, self.list_memories, self.update_memory, self.forget_memory,
                self.memory_history, self.supersede_decision, self.deprecate_decision,
                self.search_entities, self.search_facts)
