"""``GraphBackend``: the primary memory layer, episodes as graphiti ``Episodic`` rows in an
embedded Kùzu database, entities from structured bodies, hybrid search of our own.

Handles opened on one path in one process share one core (database, index, write lock); the
database closes with the last handle.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Sequence
from datetime import datetime
from functools import partial
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backends.errors import (
    BackendUnavailable,
    WriteFailed,
)
from backends.graph import shared
from backends.graph.address import Engine
from backends.graph.embedder import (
    AnyEmbedder,
)
from backends.graph.history import Enrichment, KeptFact
from backends.graph.kuzu import core as core_module
from backends.graph.kuzu import engines, queries, rows, upgrade
from backends.graph.kuzu.core import ROW_BYTES, Core
from backends.graph.kuzu.database import (
    GRAPHITI_INDEXES,
    LAYER,
    Session,
)
from backends.graph.stored import encode
from backends.model import (
    DEFAULT_MAX_BODY_BYTES,
    EPISODE_ID,
    Episode,
    Hit,
    Receipt,
    check_filters,
    ensure_body_fits,
    now,
)
from backends.protocol import Enriched, KnownEntity, KnownFact, Position

if TYPE_CHECKING:
    from backends.graph.enrich import Enricher

log = logging.getLogger(__name__)

FETCH_CHUNK = 256
DELETE_BYTES = 4096


WRITTEN_ALONE = "written alone"
"""The journal epoch a graph records once written alone (``--backend graph``) after following a
journal: it may then hold memories the journal never had, which its next take-over brings into
the journal. A graph following a journal holds nothing else: what it has and the journal lacks
was deleted from the journal (by hand, its index rebuilt since), never to come back."""


class GraphBackend:
    """The graph layer. Open with ``await GraphBackend.open(home / "graph")``."""

    layer = LAYER
    shared = False
    """one process writes it, fed by one journal (a server's graph is ``shared``)"""

    def __init__(self, core: Core, max_body_bytes: int) -> None:
        self._core: Core | None = core
        self._max_body_bytes = max_body_bytes
        self._alone = False

    def mark_written_alone(self) -> None:
        """This graph is opened alone (``--backend graph``): its first write records that it
        no longer follows its home's journal exactly (``WRITTEN_ALONE``), once, if it did, so
        that the journal's next holder takes in what only it holds. Reads leave it following."""
        self._alone = True

    @classmethod
    async def open(
        cls,
        path: str | PathLike[str],
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        embedder: AnyEmbedder | None = None,
        read_only: bool = False,
        progress: upgrade.Progress | None = None,
        engine: Engine | None = None,
        llm: Any = None,
    ) -> GraphBackend:
        """Open (or create) the graph under ``path`` with the embedded ``engine`` (default:
        ``engines.default``, Kùzu). Raises ``BackendUnavailable`` with the reason: "not
        installed", "locked by another process", "corrupt", "out of resources" (memory, address
        space or file handles this process lacks: not damage), "unreadable", "read-only" (this
        process may read it but not write it: open it with ``read_only``, and every write raises
        ``WriteFailed``), "embedder mismatch" (see ``reembed``), "engine conflict" (the other
        embedded engine is loaded in this process), "another engine's database". A graph
        written by an older dualmem is upgraded first (upgrade.py), telling ``progress`` how
        far it got. With ``llm`` (graphiti's ``LLMClient``), free-text memories are enriched
        by graphiti's extraction in the background (``enrich``)."""
        core = await core_module.acquire(Path(path), embedder, reembed=False, read_only=read_only,
                              progress=progress, engine=engine or engines.default, llm=llm)
        return cls(core, max_body_bytes)

    @classmethod
    async def reembed(cls, path: str | PathLike[str], embedder: AnyEmbedder | None = None,
                      engine: Engine | None = None) -> int:
        """Recompute every stored vector with ``embedder`` (default: the built-in one) and
        record it; returns how many episodes were re-embedded."""
        core = await core_module.acquire(Path(path), embedder, reembed=True,
                              engine=engine or engines.default)
        try:
            return len(core.index)
        finally:
            await core_module.release(core)

    async def upsert(self, episode: Episode) -> Receipt:
        return (await self.upsert_many([episode]))[0]

    async def upsert_many(self, episodes: Sequence[Episode]) -> list[Receipt]:
        """``upsert`` of each episode in order; the last of one id wins. Replacements and
        episodes with entities are written in one transaction, many new plain ones by one COPY;
        if it raises, either part may be stored (invalid bodies raise before anything is)."""
        core = self._open_core()
        for episode in episodes:
            ensure_body_fits(episode, self._max_body_bytes)
        if self._alone:
            followed = await self.applied()
            if followed is not None and followed.epoch != WRITTEN_ALONE:
                await self.record_applied(Position(WRITTEN_ALONE, 0))
            self._alone = False
        latest = list({episode.id: episode for episode in episodes}.values())
        prepared = await shared.prepare(core.embedder, latest)
        writes = [rows.EpisodeWrite(episode, encode(vector), structure, names)
                  for episode, vector, structure, names in prepared]
        by_id = {episode.id: vector for episode, vector, _, _ in prepared}
        async with core.write_lock:
            await core.unindex()
            stored = {write.episode.id for write in writes if write.episode.id in core.index}
            bulk = rows.bulk_part(writes, stored, core.directory)
            in_bulk = {write.episode.id for write in bulk}
            rest = [write for write in writes if write.episode.id not in in_bulk]
            at = now()
            # Two transactions at most (the BatchUpsert contract allows a stored subset on
            # failure); the index learns each part once it is committed.
            for part, work in (
                (rest, partial(rows.write_episodes, writes=rest, stored=stored, at=at)),
                (bulk, partial(rows.copy_episodes, writes=bulk, directory=core.directory)),
            ):
                if not part:
                    continue
                try:
                    core.index.begin()
                    retired = await core.write(work, payload=_size(part)) or {}
                except WriteFailed:
                    await core.resync({w.episode.id: (w.episode, by_id[w.episode.id])
                                       for w in part})
                    raise
                core.remember([(write.episode, by_id[write.episode.id]) for write in part])
                for write in part:
                    core.links.put(write.episode, write.structure,
                                   retired.get(write.episode.id, ()), at)
        if core.llm is not None:  # after the write is stored: it never waits for the LLM
            self.enricher.later(latest)
        location = str(core.db.file)
        # model_construct: the fields are known good, and validation was 5% of a batch write.
        return [Receipt.model_construct(id=episode.id, layer=LAYER, location=location,
                                        pending=False) for episode in episodes]

    async def get(self, episode_id: str) -> Episode | None:
        if not EPISODE_ID.fullmatch(episode_id):
            return None  # no such id can be stored (and a lone surrogate cannot reach Kùzu)
        found = await self._fetch([episode_id])
        return found.get(episode_id)

    async def delete(self, episode_id: str) -> bool:
        core = self._open_core()
        async with core.write_lock:
            if episode_id not in core.index:
                return False
            await core.unindex()
            core.index.begin()
            await core.write(lambda session: rows.delete_episode(session, episode_id),
                             payload=DELETE_BYTES)
            core.forget(episode_id)
        return True

    async def search(
        self,
        query: str,
        *,
        group_ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 10,
        as_of: datetime | None = None,
    ) -> list[Hit]:
        """The protocol's search (``shared.search``): through entities and valid facts,
        now or at ``as_of``."""
        core = self._open_core()
        return await shared.search(core.index, core.links, core.embedder, query,
                                   group_ids=group_ids, kinds=kinds, limit=limit, as_of=as_of)

    async def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        check_filters(group_ids, kinds)
        core = self._open_core()
        keys = await core.read(lambda session: rows.ordered_keys(session, group_ids, kinds))
        for start in range(0, len(keys), FETCH_CHUNK):
            chunk = keys[start : start + FETCH_CHUNK]
            found = await self._fetch(chunk)
            for key in chunk:
                if key in found:  # deleted since the scan began
                    yield found[key]

    async def count(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> int:
        check_filters(group_ids, kinds)
        core = self._open_core()
        return await core.read(lambda session: rows.count(session, group_ids, kinds))

    async def ids_starting(self, prefix: str, *,
                           group_ids: Sequence[str] | None = None) -> list[str]:
        """``backends.protocol.FindsIds``: a range of the search index."""
        check_filters(group_ids, None)
        return self._open_core().index.ids_starting(prefix, group_ids)

    async def applied(self, epoch: str | None = None) -> Position | None:
        """The position of the journal this graph was last brought up to (``record_applied``),
        or None when it never was: a new graph, or one written before the journal existed.
        One journal feeds an embedded graph, so ``epoch`` need not be named (the caller
        compares the position's own)."""
        meta = self._open_core().db.meta
        if "journal_epoch" not in meta:
            return None
        return Position(meta["journal_epoch"], int(meta["journal_seq"]))

    async def record_applied(self, position: Position) -> None:
        """Remember that every change of the journal up to ``position`` is in this graph."""
        core = self._open_core()
        values = {"journal_epoch": position.epoch, "journal_seq": str(position.seq)}

        def record(session: Session) -> None:
            with session.transaction():
                for key, value in values.items():
                    session.rows(queries.PUT_META, key=key, value=value)

        await core.write(record, payload=ROW_BYTES * len(values))
        core.db.meta.update(values)

    async def retired_facts(self, episodes: Collection[str] | None = None) -> list[KeptFact]:
        """The facts rewrites retired and this graph keeps as history (of ``episodes`` only,
        when given), each with the content its memory is at."""
        core = self._open_core()
        found = await core.read(lambda session: rows.retired_facts(session, episodes))
        return shared.at_content(core.index, found)

    async def keep_history(self, facts: Sequence[KeptFact]) -> int:
        """Write the retired facts (of another graph) this one lacks beside their episodes, and
        retire again those of memories at the content they were retired at; those of episodes
        it does not hold are left. Returns how many were written."""
        core = self._open_core()
        vectors = await shared.kept_vectors(core.embedder, facts)
        again = shared.retired_again(core.index, facts)
        async with core.write_lock:
            await core.unindex()
            size = len(facts) * (ROW_BYTES + 12 * core.embedder.dimension)  # 3 vectors each
            written = await core.write(
                partial(rows.keep_history, facts=facts, vectors=vectors, again=again),
                payload=size)
            shared.learn_history(core.links, written)
        return len(written)

    async def enriched(self) -> dict[str, str]:
        """Episode id -> the digest of the content graphiti's extraction last ran on."""
        return dict(await self._open_core().enriched())

    async def enrichments(self, keys: Iterable[str]) -> list[Enrichment]:
        """What graphiti's extraction added to each of these memories, for those enriched at
        the content held now."""
        core = self._open_core()

        async def linked(key: str) -> shared.Linked:
            return await core.read(partial(rows.enrichment, episode=key))

        return await shared.enrichments(core.index, await core.enriched(), keys, linked)

    async def keep_enrichments(self, found: Sequence[Enrichment]) -> int:
        """Write back what an enrichment of another graph (or before a rebuild) found, for
        the memories held at the content it was made from, and record them as enriched
        there: graphiti is not asked again. Returns how many were written."""
        core = self._open_core()
        due = shared.current(core.index, found)
        if not due:
            return 0
        vectors = await shared.kept_vectors(
            core.embedder, (fact for item in due for fact in item.facts),
            (entity for item in due for entity in item.mentions))
        async with core.write_lock:
            await core.unindex()
            size = len(vectors) * (ROW_BYTES + 4 * core.embedder.dimension)
            await core.write(partial(rows.keep_enrichments, found=due, vectors=vectors),
                             payload=size)
            shared.learn_enrichments(core.links, due)
        (await core.enriched()).update((item.episode, item.digest) for item in due)
        return len(due)

    async def enrich(self, *, group_ids: Sequence[str] | None = None,
                     progress: Callable[[int, int], None] | None = None) -> Enriched:
        """``Enriches.enrich``: graphiti's LLM extraction (enrich.py)."""
        return await self.enricher.everything([e async for e in self.scan(group_ids=group_ids)],
                                         progress)

    @property
    def enricher(self) -> Enricher:
        from backends.graph.kuzu.enrich import enricher_of  # imports graphiti

        return enricher_of(self._open_core())

    async def knowledge(
        self, group_ids: Sequence[str]
    ) -> tuple[list[KnownEntity], list[KnownFact]]:
        """``backends.protocol.Knows``, as graphiti reads this database (graph/knowledge.py)."""
        from backends.graph.knowledge import read_knowledge
        from backends.graph.kuzu.enrich import SharedKuzuDriver

        return await read_knowledge(SharedKuzuDriver(self._open_core()), group_ids)

    async def build_graphiti_indexes(self) -> None:
        """Build graphiti's own full-text indexes, for a graphiti user's ``Graphiti.search``
        over this graph (ours needs none), and keep them from then on: a write drops them
        (Kùzu's full-text index loses rows under rewrites), and ``refresh_graphiti_indexes``
        or closing the graph builds them again. ``BackendUnavailable`` ("no full-text
        extension") on an engine without one."""
        await self._open_core().index_for_graphiti()

    @property
    def graphiti_indexes(self) -> str | None:
        """graphiti's full-text indexes: None (never built), "fresh" or "stale" (dropped by a
        write, due to be rebuilt)."""
        return self._open_core().db.meta.get(GRAPHITI_INDEXES)

    async def refresh_graphiti_indexes(self) -> None:
        """Rebuild graphiti's full-text indexes if they were built once and a write has dropped
        them since (after bulk writes and at repair; closing does it too)."""
        core = self._open_core()
        async with core.write_lock:
            await core.reindex()

    async def aclose(self) -> None:
        core, self._core = self._core, None
        if core is not None:
            await core_module.release(core)

    def _open_core(self) -> Core:
        if self._core is None:
            raise BackendUnavailable(LAYER, "closed")
        return self._core

    async def _fetch(self, keys: Iterable[str]) -> dict[str, Episode]:
        wanted = list(keys)
        if not wanted:
            return {}
        return await self._open_core().read(lambda session: rows.fetch(session, wanted))


def _size(writes: Sequence[rows.EpisodeWrite]) -> int:
    """About how many bytes ``writes`` add to the database (for ``space.ensure_room``)."""
    return sum(len(w.episode.body) + len(w.episode.name) + len(w.vector)
               + ROW_BYTES * (1 + len(w.structure.entities) + 2 * len(w.structure.facts))
               + sum(8 * len(v) for v in w.name_vectors.values()) for w in writes)

