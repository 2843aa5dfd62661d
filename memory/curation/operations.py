"""The curation of one project's memory, written once for every interface (MCP, the CLI, the
memory browser): find, correct, forget and bring back memories, see what they were, and end
decisions. Works on any ``MemoryBackend``; earlier versions are kept by ``Versions``."""

from __future__ import annotations

import builtins  # Curator.list shadows the type in the class
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from backends.errors import InvalidEpisode
from backends.graph.history import KeptFact
from backends.insights import Scope
from backends.model import Episode, utc
from backends.protocol import KnownEntity, KnownFact, MemoryBackend, Restores
from fallback import kept_log
from fallback.versions import FOLDER, Version, Versions
from memory.agent.decisions import Adr, DecisionError, deprecate_adr, supersede_adr
from memory.agent.records import fetch
from memory.agent.scopes import ADR, project_group
from memory.curation.dedupe import Duplicates, merge, near_duplicates
from memory.curation.ids import UnknownId, resolve
from memory.curation.knowledge import Found, search_entities, search_facts
from memory.store.config import Config


class NotForgotten(UnknownId):
    """``restore`` of a memory that is stored, or was never forgotten."""


@dataclass
class History:
    """What became of one memory."""

    id: str
    current: Episode | None
    """as it stands; None when it is forgotten"""
    versions: list[Version]
    """its earlier versions, oldest first, each with the change that ended it"""
    retired_facts: list[KeptFact] = field(default_factory=list)
    """the graph's facts its rewrites retired"""
    superseded_by: str | None = None
    """a decision's successor"""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id,
                "current": None if self.current is None else self.current.to_json(),
                "versions": [version.to_json() for version in self.versions],
                "retired_facts": [fact.to_json() for fact in self.retired_facts],
                "superseded_by": self.superseded_by}


def versions_of(config: Config) -> Versions:
    """The versions folder of ``config``'s home, beside its journal."""
    return Versions(config.files_dir / FOLDER)


class Curator:
    """Curation of project ``project_id``'s memories in ``store``; ``files`` is the journal's
    folder, where earlier versions and the graph's retired facts are kept. ``layer``: the
    layer itself when ``store`` wraps it (a cache), whose optional capabilities (views set
    aside, a knowledge graph, ids found by prefix) a wrapper does not show."""

    def __init__(self, store: MemoryBackend, project_id: str, files: Path, *,
                 layer: MemoryBackend | None = None) -> None:
        self.store = store
        self.layer = store if layer is None else layer
        self.project_id = project_id
        self.group = project_group(project_id)
        self.versions = Versions(files / FOLDER)
        self._retired_file = files / "history.jsonl"  # memory.store.kept_facts writes it

    async def resolve(self, given: str, *, forgotten: bool = False) -> str:
        """The id ``given`` names (or starts), of any group; with ``forgotten``, forgotten
        memories' ids count too."""
        if not forgotten:
            return await resolve(self.layer, given)
        aside = ([item.episode.id for item in self.layer.set_aside()]
                 if isinstance(self.layer, Restores) else [])
        return await resolve(self.layer, given, also=[*self.versions.ids(), *aside])

    async def get(self, given: str) -> Episode:
        episode = await self.store.get(await self.resolve(given))
        if episode is None:  # deleted between the two reads
            raise UnknownId(f"no memory with id {given!r}")
        return episode

    async def list(self, *, kinds: Sequence[str] | None = None, spec: str | None = None,
                   since: datetime | None = None, limit: int = 50,
                   group_ids: Sequence[str] | None = None) -> list[Episode]:
        """The newest ``limit`` memories (of ``kinds``, tagged with ``spec``, created at
        ``since`` or later) of ``group_ids`` (default: the project's), newest first."""
        if limit < 1:
            raise InvalidEpisode("limit must be at least 1")
        scope = Scope(self.group, spec)
        after = None if since is None else utc(since)
        found = [episode async for episode in self.store.scan(
            group_ids=list(group_ids) if group_ids else [self.group], kinds=kinds)
            if scope.mine(episode) and (after is None or episode.created_at >= after)]
        return found[::-1][:limit]

    async def update(self, given: str, *, body: str | None = None, name: str | None = None,
                     reason: str = "") -> Episode:
        """The memory with a new ``body`` and/or ``name``, under the same id; the version it
        replaces is kept in its history. Unchanged: nothing is written."""
        old = await self.get(given)
        new = Episode.parse(**(old.to_json() | {"body": old.body if body is None else body,
                                                "name": old.name if name is None else name}))
        if (new.body, new.name) == (old.body, old.name):
            return old
        self.versions.keep("updated", old, reason=reason)
        await self.store.upsert(new)
        return new

    async def forget(self, given: str, reason: str = "") -> Episode:
        """Delete the memory, its text kept in its history, so ``restore`` brings it back;
        returns it as it was."""
        episode = await self.get(given)
        self.versions.keep("forgotten", episode, reason=reason)
        await self.store.delete(episode.id)
        return episode

    async def restore(self, given: str) -> Episode:
        """Bring back a forgotten memory (or a hand bullet a view set aside) as it was."""
        key = await self.resolve(given, forgotten=True)
        kept = self.versions.forgotten(key)
        if isinstance(self.layer, Restores) and (back := await self.layer.restore(key)):
            if kept is not None:
                self.versions.keep("restored", back)
            return back
        if kept is None or await self.store.get(key) is not None:
            raise NotForgotten(f"nothing set aside or forgotten with id {key}: nothing to "
                               "restore (dualmem status lists what views set aside)")
        self.versions.keep("restored", kept)
        await self.store.upsert(kept)
        return kept

    async def history(self, given: str) -> History:
        key = await self.resolve(given, forgotten=True)
        current = await self.store.get(key)
        retired = [fact for fact in kept_log.read(self._retired_file, KeptFact.from_json)
                   if fact.episode == key and fact.expired_at is not None]
        data = current.data if current is not None and current.kind == ADR else None
        successor = data.get("superseded_by") if isinstance(data, dict) else None
        return History(key, current, self.versions.of(key), list({f.uuid: f for f in retired}
                                                                  .values()), successor)

    async def supersede_decision(self, old: str, new: Adr) -> Adr:
        """Record ``new`` as the successor of decision ``old`` (an ADR id, or its memory's id
        or a prefix of it); the old record's version is kept in its history."""
        episode = await self._decision(old)
        self.versions.keep("updated", episode, reason=f"superseded by {new.adr_id}")
        return await supersede_adr(self.store, self.project_id, _adr_id(episode), new)

    async def deprecate_decision(self, given: str, reason: str = "") -> Adr:
        """End decision ``given`` without a successor."""
        episode = await self._decision(given)
        self.versions.keep("updated", episode, reason=reason or "deprecated")
        return await deprecate_adr(self.store, self.project_id, _adr_id(episode), reason)

    async def entities(self, query: str = "", limit: int = 20) -> Found[KnownEntity]:
        """The project's entities that ``query`` names (``knowledge.search_entities``)."""
        return await search_entities(self.layer, [self.group], query, limit)

    async def facts(self, query: str = "", limit: int = 20, *,
                    retired: bool = False) -> Found[KnownFact]:
        """The project's facts that ``query`` names (``knowledge.search_facts``)."""
        return await search_facts(self.layer, [self.group], query, limit, retired=retired)

    async def dedupe(self, *, apply: bool = False) -> builtins.list[Duplicates]:
        """The project's near-duplicate memories (``dedupe.near_duplicates``); with ``apply``,
        each set merged into its oldest, the others' texts kept in their histories."""
        found = await near_duplicates(self.store, [self.group])
        if apply:
            for duplicates in found:
                await merge(self.store, self.versions, duplicates)
        return found

    async def _decision(self, given: str) -> Episode:
        found = await fetch(self.store, self.group, ADR, given, Adr)
        if found is not None:
            return found[0]
        try:
            episode = await self.get(given)
        except UnknownId:
            raise DecisionError(f"no ADR {given!r} in project {self.project_id!r}") from None
        if episode.kind != ADR:
            raise DecisionError(f"memory {episode.id} is a {episode.kind}, not a decision")
        return episode


def _adr_id(episode: Episode) -> str:
    data = episode.data
    return str(data["adr_id"]) if isinstance(data, dict) and "adr_id" in data else episode.name
