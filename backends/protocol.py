"""The contract every memory layer keeps. Migration, seeding, the agent API and context
assembly are written once against it and never ask which layer they are talking to."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from backends.lazy import lazy_exports
from backends.model import Episode, Hit, Receipt

if TYPE_CHECKING:
    from backends.known import Enriched as Enriched
    from backends.known import KnownEntity as KnownEntity
    from backends.known import KnownFact as KnownFact
else:
    # Built only by the graph layer and curation: a one-shot read of the journal would pay
    # for making their dataclasses (~1 ms of CPU each) and use none of them.
    __getattr__, __dir__ = lazy_exports(
        __name__, {"backends.known": ("Enriched", "KnownEntity", "KnownFact")})


@runtime_checkable
class MemoryBackend(Protocol):
    layer: str
    """Short name of the layer (``"file"``, ``"graph"``, ``"dual"``), as in hits and receipts."""

    async def upsert(self, episode: Episode) -> Receipt:
        """Store ``episode``; an existing episode with the same id is replaced, never duplicated.
        Returns only once the write is durable, saying where. Raises ``InvalidEpisode`` for a
        body over the size limit, ``WriteFailed`` when it cannot be stored."""
        ...

    async def get(self, episode_id: str) -> Episode | None:
        """The episode with this id, or None when there is none."""
        ...

    async def delete(self, episode_id: str) -> bool:
        """Remove the episode; True if it existed. Deleting a missing id is a no-op (False)."""
        ...

    async def search(
        self,
        query: str,
        *,
        group_ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 10,
    ) -> list[Hit]:
        """At most ``limit`` hits, best first, scores in [0, 1], only from the given groups and
        kinds (None: all). Never raises for an empty store, an empty or a very long query."""
        ...

    def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        """Every stored episode of the given groups and kinds, each once, ordered by
        (created_at, id)."""
        ...

    async def count(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> int:
        """How many episodes ``scan`` with the same filters would yield."""
        ...

    async def aclose(self) -> None:
        """Release files, locks and watchers; the backend is unusable afterwards. Idempotent."""
        ...


class Tombstone(NamedTuple):
    """A delete that another layer has yet to hear about."""

    id: str
    deleted_at: datetime


@runtime_checkable
class Tombstones(Protocol):
    """Optional: a layer that remembers its deletes so a migration can replay them elsewhere."""

    async def bury(self, episode_ids: Collection[str]) -> None:
        """Record these ids as deleted (durably), whether or not this layer holds them."""
        ...

    def tombstones(self) -> AsyncIterator[Tombstone]:
        """Every recorded delete not yet forgotten, each once."""
        ...

    async def forget_tombstones(self, episode_ids: Collection[str]) -> None:
        """Drop the tombstones of these ids (they have been replayed); unknown ids are ignored."""
        ...


class SetAside(NamedTuple):
    """Text a person typed that its view no longer shows."""

    episode: Episode
    since: datetime
    held: bool
    """True: still stored, held back from forgetting (a mass change took it out of its view);
    False: forgotten (deleted), its text kept by its tombstone"""


@runtime_checkable
class Restores(Protocol):
    """Optional: a layer with views people edit, which keeps what was taken out of them so
    that it can be shown and brought back."""

    def set_aside(self) -> list[SetAside]:
        """What was taken out of the views: held first, then forgotten, newest first."""
        ...

    async def restore(self, episode_id: str) -> Episode | None:
        """Show the set-aside memory ``episode_id`` in its view again (stored again when it was
        forgotten) and return it; None when nothing of that id is set aside."""
        ...


@runtime_checkable
class Purges(Protocol):
    """Optional: a layer that can forget memories for good, their text out of every file it
    wrote (a leaked secret), where a delete keeps it for ``restore``."""

    async def purge(self, episode_ids: Collection[str]) -> list[str]:
        """Remove every trace of the text of these memories; returns those found. Unknown ids
        are ignored."""
        ...


@runtime_checkable
class ReadsNewest(Protocol):
    """Optional: a layer whose index reads memories newest first, so that a caller wanting
    the newest few stops early rather than reading (and checking) every one."""

    def newest(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        """``scan``'s episodes in the reverse order: by (created_at, id), newest first."""
        ...


@runtime_checkable
class FindsIds(Protocol):
    """Optional: a layer that finds ids by prefix in an index, without reading every memory."""

    async def ids_starting(self, prefix: str, *,
                           group_ids: Sequence[str] | None = None) -> list[str]:
        """The stored ids of the given groups (None: all) that start with ``prefix``, sorted."""
        ...


class Position(NamedTuple):
    """Where a journal stands: its changes are numbered within an epoch."""

    epoch: str
    seq: int


class Changes(NamedTuple):
    """What changed after a position: ids written and ids deleted, in the order they happened,
    and the position they bring a reader to. ``reset`` means the asked position is not of this
    journal (another epoch, or ahead of it): the reader must compare everything it holds."""

    position: Position
    written: list[str]
    deleted: list[str]
    reset: bool = False


@runtime_checkable
class Journal(Protocol):
    """Optional: a layer that numbers its changes, so a derived copy (the graph, an index) can
    catch up by reading what changed since its last position instead of everything."""

    def position(self) -> Position:
        """The position after the newest change."""
        ...

    def changes_since(self, position: Position | None, limit: int = 5000) -> Changes:
        """At most ``limit`` changes after ``position`` (None: from the start); ids written
        are read back with ``get``."""
        ...


@runtime_checkable
class BatchUpsert(Protocol):
    """Optional: a layer that stores many episodes faster together than one by one."""

    async def upsert_many(self, episodes: Sequence[Episode]) -> list[Receipt]:
        """``upsert`` of each episode in order; all durable when it returns. If it raises, any
        subset may be stored, so callers must be able to write the batch again."""
        ...


@runtime_checkable
class Locates(Protocol):
    """Optional: a layer whose episodes lie where a person can open them (files), so that a
    report can name the place of one that needs their attention."""

    def location(self, episode: Episode) -> str:
        """Where ``episode`` lies in this layer (its file)."""
        ...


@runtime_checkable
class ReportsProblems(Protocol):
    """Optional: a layer that can meet stored items it cannot read (hand-edited or damaged
    files) and keeps serving the rest; it lists them so status can name them."""

    @property
    def problems(self) -> list[tuple[Path, str]]:
        """Each unreadable item's place and why it cannot be read."""
        ...


@runtime_checkable
class Enriches(Protocol):
    """Optional: a layer that can add an LLM's extraction to its free-text memories."""

    async def enrich(self, *, group_ids: Sequence[str] | None = None,
                     progress: Callable[[int, int], None] | None = None) -> Enriched:
        """Run graphiti's extraction over every free-text memory (of ``group_ids``) not yet
        enriched at its current content, telling ``progress`` (done, total); records each one
        done, so a second run does nothing new. Raises ``ProviderFailed`` when the LLM fails
        or none is configured; what was done stays recorded, and no memory is touched."""
        ...


async def upsert_all(target: MemoryBackend, episodes: Sequence[Episode]) -> list[Receipt]:
    """``upsert`` of each episode, in one batch when the target takes batches."""
    if isinstance(target, BatchUpsert):
        return await target.upsert_many(episodes)
    return [await target.upsert(episode) for episode in episodes]


@runtime_checkable
class Knows(Protocol):
    """Optional: a layer that keeps a knowledge graph of what its memories name."""

    async def knowledge(
        self, group_ids: Sequence[str]
    ) -> tuple[list[KnownEntity], list[KnownFact]]:
        """Every entity and fact of these groups, current and retired."""
        ...
