"""``GraphBackend``: the primary memory layer, episodes as graphiti ``Episodic`` rows in an
embedded Kùzu database, entities from structured bodies, hybrid search of our own.

Handles opened on one path in one process share one core (database, index, write lock); the
database closes with the last handle.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Sequence
from datetime import datetime
from functools import partial
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from backends.errors import (
    OUT_OF_RESOURCES,
    BackendUnavailable,
    DualmemError,
    ProviderFailed,
    StoreCorrupt,
    WriteFailed,
)
from backends.graph import engines, rows, salvage, shared, space, upgrade
from backends.graph.address import DEFAULT_ENGINE, Engine
from backends.graph.database import (
    FRESH,
    GRAPHITI_INDEXES,
    LAYER,
    READ_ONLY,
    STALE,
    GraphDatabase,
    Session,
    build_graphiti_indexes,
    drop_graphiti_indexes,
    exhausted,
)
from backends.graph.embedder import (
    AnyEmbedder,
    HashingEmbedder,
    Vectors,
    embed,
)
from backends.graph.history import Enrichment, KeptFact
from backends.graph.index import Entry, EpisodeIndex
from backends.graph.links import GraphLinks
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
from backends.protocol import Enriched, Position
from backends.search.entities import extract
from backends.search.ranking import search_text

if TYPE_CHECKING:
    from backends.graph.enrich import Enricher

log = logging.getLogger(__name__)

T = TypeVar("T")
FETCH_CHUNK = 256
OPEN_WAIT = 120.0
"""seconds a second opener in this process waits for the first to finish opening"""
# How Kùzu begins the message of a failed file write (a full disk, a file-size limit).
_IO_FAILURE = "IO exception"
DELETE_BYTES = 4096
ROW_BYTES = 512
INDEX_TOKEN = "index_token"
"""meta key: the token of the index file built for this graph (``index.EpisodeIndex``)"""
"""what a row costs beside its text: columns, keys, index entries"""


class _Core:
    """What every handle on one database shares."""

    def __init__(self, directory: Path, embedder: AnyEmbedder, read_only: bool = False,
                 engine: Engine = DEFAULT_ENGINE, llm: Any = None) -> None:
        self.directory = directory
        self.engine = engine
        self.embedder = embedder
        self.llm = llm
        """graphiti's ``LLMClient`` for enrichment (enrich.py), or None"""
        self._enricher: Enricher | None = None
        self._enriched: dict[str, str] | None = None
        self.read_only = read_only
        self.links = GraphLinks()
        self._index: EpisodeIndex | None = None
        """search answers from here (episodes as stored, too); get, scan and count read rows"""
        self.users = 0
        self.loop = asyncio.get_running_loop()
        self.ready: asyncio.Future[None] = self.loop.create_future()
        self.write_lock = asyncio.Lock()
        self.failed: str | None = None
        """why writing stopped (a write failed in the database), or None"""
        self._db: GraphDatabase | None = None

    @property
    def index(self) -> EpisodeIndex:
        if self._index is None:
            raise BackendUnavailable(LAYER, "closed")
        return self._index

    @property
    def db(self) -> GraphDatabase:
        if self._db is None:
            raise BackendUnavailable(LAYER, "closed")
        return self._db

    async def start(self, *, reembed: bool, progress: upgrade.Progress | None = None) -> None:
        self._db = await GraphDatabase.connect(self.directory, read_only=self.read_only,
                                               engine=self.engine)
        try:
            await self._check_embedder(reembed=reembed)
            if upgrade.outdated(self.db.meta) and not self.read_only:
                await self.unindex()
                await upgrade.upgrade(self, self.db.meta, progress)
                await self.reindex()
            await self._load()
        except StoreCorrupt as exc:
            await self.close()
            raise BackendUnavailable(LAYER, "corrupt", exc.detail) from exc
        except BaseException:
            await self.close()
            raise

    @property
    def enricher(self) -> Enricher:
        if self.llm is None:
            raise ProviderFailed(shared.NO_LLM)
        if self._enricher is None:
            from backends.graph.enrich import Enricher, KuzuPlace

            self._enricher = Enricher(KuzuPlace(self), self.llm)
        return self._enricher

    async def enriched(self) -> dict[str, str]:
        """Episode id -> the digest it was enriched at (``rows.enriched``), read once: only
        this process writes the record."""
        if self._enriched is None:
            self._enriched = await self.read(rows.enriched)
        return self._enriched

    async def close(self) -> None:
        if self._enricher is not None:
            await self._enricher.stop()
        if self._db is not None:
            # A graph this process leaves is one graphiti can search.
            with contextlib.suppress(DualmemError):
                await self.reindex()
        db, self._db = self._db, None
        index, self._index = self._index, None
        if index is not None:
            index.close()
        if db is not None:
            await db.close()

    async def unindex(self) -> None:
        """Before a write: drop graphiti's full-text indexes, which the write would leave
        missing rows (database.drop_graphiti_indexes)."""
        if self.db.meta.get(GRAPHITI_INDEXES) == FRESH:
            await self.write(drop_graphiti_indexes, payload=ROW_BYTES)
            self.db.meta[GRAPHITI_INDEXES] = STALE

    async def reindex(self) -> None:
        """Rebuild graphiti's full-text indexes if a write dropped them."""
        if (self.db.meta.get(GRAPHITI_INDEXES) == STALE and self.db.read_only is None
                and self.failed is None):
            rows_now = len(self._index) if self._index is not None else 0
            await self.write(build_graphiti_indexes, payload=ROW_BYTES * (1 + rows_now))
            self.db.meta[GRAPHITI_INDEXES] = FRESH

    async def read(self, work: Callable[[Session], T]) -> T:
        try:
            return await self.db.run(work)
        except (RuntimeError, ValueError) as exc:  # ValueError: a row that is no valid Episode
            if exhausted(exc):  # a sound database this process cannot read now
                raise BackendUnavailable(LAYER, OUT_OF_RESOURCES, str(exc)) from exc
            raise StoreCorrupt(self.db.file, f"read failed: {exc}") from exc

    async def write(self, work: Callable[[Session], T], payload: int) -> T:
        """Run ``work``, a write of about ``payload`` bytes, if there is room for it (space.py).
        A write that fails for want of space all the same stops this core writing (Kùzu may be
        unsafe to write then) until the graph is opened again, and says so."""
        if self.db.read_only is not None:
            raise WriteFailed(f"graph layer: {self.db.file} is read-only here "
                              f"({self.db.read_only})")
        if self.failed is not None:
            raise WriteFailed(f"graph layer: not writing after a failed write ({self.failed}); "
                              "open the graph again to go on")
        space.ensure_room(self.directory, payload)
        try:
            try:
                return await self.db.run(work)
            except RuntimeError as exc:
                if not await self._keys_without_rows(exc):
                    raise
                await self._salvage()
                return await self.db.run(work)
        except OSError as exc:  # a COPY file that could not be written: nothing reached Kùzu
            raise WriteFailed(f"graph layer: {exc.strerror or exc}") from exc
        except RuntimeError as exc:
            if str(exc).startswith(_IO_FAILURE):
                self.failed = str(exc)
            raise WriteFailed(f"graph layer: {exc}") from exc

    async def _keys_without_rows(self, exc: RuntimeError) -> bool:
        """Whether ``exc`` is a write refused for a key that no row has (salvage.py)."""
        key = salvage.duplicated_key(exc)
        if key is None:
            return False
        try:
            return not await self.db.run(partial(salvage.has_row, key=key))
        except RuntimeError:
            return False

    async def _salvage(self) -> None:
        """Rewrite the database from its rows (salvage.py), the damaged file kept aside."""
        space.ensure_room(self.directory, payload=2 * self.db.file.stat().st_size)
        folder = await self.db.run(lambda session: salvage.export(session.script, self.directory))
        db = self.db
        self._db = None
        db.abandon()
        # The write dropped graphiti's full-text indexes first (unindex): none to rebuild here.
        aside, _ = await asyncio.to_thread(salvage.replace, db.file, folder, self.engine)
        log.warning("the graph's key index held keys of rows never committed (a process "
                    "killed mid-write); rewrote %s from its rows, the damaged file is in %s",
                    db.file, aside)
        self._db = await GraphDatabase.connect(self.directory, engine=self.engine)

    async def resync(self, latest: dict[str, tuple[Episode, Vectors]]) -> None:
        """After a failed write of ``latest`` (id -> what was written): learn what the rows hold
        now, since a failed COPY may have kept some, so that writing them again replaces them
        instead of failing on their keys."""
        if self.failed is not None:
            return  # nothing more will be written by this core
        wanted = list(latest)
        try:
            found = await self.read(lambda session: rows.fetch(session, wanted))
        except DualmemError:
            return
        for key, (episode, vector) in latest.items():
            stored = found.get(key)
            if stored is None:
                self.forget(key)
            elif stored == episode:
                self.remember([(stored, vector)])
                self.links.put(stored, extract(stored), (), now())
            elif stored != self.index.episode(key):
                self.remember([(stored, (await embed(self.embedder, [search_text(stored)]))[0])])
                self.links.put(stored, extract(stored), (), now())

    async def _check_embedder(self, *, reembed: bool) -> None:
        want = {"embedder": self.embedder.name, "dimension": str(self.embedder.dimension)}
        have = {key: self.db.meta[key] for key in want if key in self.db.meta}
        if have == want:
            return
        if self.read_only and not have:
            return  # a graph from before the meta, read-only: _load embeds what it must
        if have and (not reembed or self.read_only):
            raise BackendUnavailable(
                LAYER, "embedder mismatch",
                f"stored vectors are {have.get('embedder')}/{have.get('dimension')}, this "
                f"process embeds with {want['embedder']}/{want['dimension']}; re-embed with "
                "`dualmem reembed` (GraphBackend.reembed(path))",
            )
        stored = [row.episode for row in await self.read(rows.every_row)] if have else []
        vectors = await embed(self.embedder, [search_text(episode) for episode in stored])
        # graphiti's search compares these with its query vectors: they follow the embedder.
        others = [(setter, await self.read(partial(rows.texts, query=query)) if have else [])
                  for setter, query in ((rows.SET_NAME_EMBEDDING, rows.ENTITY_NAMES),
                                        (rows.SET_FACT_EMBEDDING, rows.FACT_TEXTS))]
        fresh = [(setter, key, vector.tolist()) for setter, found in others if found
                 for (key, _), vector in zip(
                     found, await embed(self.embedder, [t for _, t in found]), strict=True)]

        def record(session: Session) -> None:
            with session.transaction():
                for episode, vector in zip(stored, vectors, strict=True):
                    session.rows(rows.SET_EMBEDDING, uuid=episode.id, embedding=rows.encode(vector))
                for setter, key, vector in fresh:
                    session.rows(setter, uuid=key, embedding=vector)
                for key, value in want.items():
                    session.rows(rows.PUT_META, key=key, value=value)

        if have:
            await self.unindex()
        size = len(stored) + len(fresh)
        await self.write(record, payload=size * (2 * self.embedder.dimension + 100))
        self.db.meta.update(want)

    async def _load(self) -> None:
        """Open the index, or build it from the rows when it is not current; then the links."""
        index = self._index = self._open_index()
        token = self.db.meta.get(INDEX_TOKEN)
        count = await self.read(lambda session: rows.count(session, None, None))
        if not index.current(token, count):
            stored = await self.read(rows.every_row)
            vectors = [rows.decode(row.vector, self.embedder.dimension) for row in stored]
            missing = [search_text(row.episode)
                       for row, vector in zip(stored, vectors, strict=True) if vector is None]
            fresh = iter(await embed(self.embedder, missing))
            token = index.rebuilt(
                [Entry(row.episode, search_text(row.episode),
                       next(fresh) if vector is None else vector)
                 for row, vector in zip(stored, vectors, strict=True)])
            if index.path is not None and self.db.read_only is None:
                # The token only spares the next open this rebuild: a disk too full to take it
                # must not stop this open (the next one builds again).
                with contextlib.suppress(WriteFailed):
                    await self._record_token(token)
        self.links = GraphLinks(index)
        if upgrade.outdated(self.db.meta):  # read-only: its rows cannot be upgraded here
            for row in await self.read(rows.every_row):
                self.links.put(row.episode, extract(row.episode), (), now())
            return
        mentions = await self.read(lambda session: session.rows(rows.MENTION_COLUMNS))
        facts = await self.read(lambda session: session.rows(rows.FACT_COLUMNS))
        # The groups of the episodes that mention or state something, not of every episode.
        places = index.located({row[0] for row in mentions} | {row[3] for row in facts})
        shared.add_links(self.links, {key: place[0] for key, place in places.items()},
                         [tuple(row) for row in mentions],
                         [(f, a, b, e, rows.aware(valid), rows.aware(invalid) if invalid else None)
                          for f, a, b, e, valid, invalid in facts])

    def _open_index(self) -> EpisodeIndex:
        """The index file beside the database; in memory for a graph opened read-only or a
        folder where it cannot be kept."""
        args = (self.embedder.dimension, self.embedder.name)
        if not self.read_only and self.db.read_only is None:
            try:
                return EpisodeIndex.open(self.directory, *args)
            except (sqlite3.Error, OSError):
                pass
        return EpisodeIndex.open(None, *args)

    async def _record_token(self, token: str) -> None:
        def record(session: Session) -> None:
            with session.transaction():
                session.rows(rows.PUT_META, key=INDEX_TOKEN, value=token)

        await self.write(record, payload=ROW_BYTES)
        self.db.meta[INDEX_TOKEN] = token

    def remember(self, written: Sequence[tuple[Episode, Vectors]]) -> None:
        self.index.put([Entry(episode, search_text(episode), vector)
                        for episode, vector in written])

    def forget(self, key: str) -> None:
        self.index.drop(key)
        self.links.drop(key)


_cores: dict[Path, _Core] = {}
_registry = threading.Lock()


def _close_leftovers() -> None:
    # A process that exits without aclose must still close Kùzu in order (never a segfault).
    for core in list(_cores.values()):
        if core._db is not None:
            core._db.close_now()


atexit.register(_close_leftovers)


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

    def __init__(self, core: _Core, max_body_bytes: int) -> None:
        self._core: _Core | None = core
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
        core = await _acquire(Path(path), embedder, reembed=False, read_only=read_only,
                              progress=progress, engine=engine or engines.default, llm=llm)
        return cls(core, max_body_bytes)

    @classmethod
    async def reembed(cls, path: str | PathLike[str], embedder: AnyEmbedder | None = None,
                      engine: Engine | None = None) -> int:
        """Recompute every stored vector with ``embedder`` (default: the built-in one) and
        record it; returns how many episodes were re-embedded."""
        core = await _acquire(Path(path), embedder, reembed=True,
                              engine=engine or engines.default)
        try:
            return len(core.index)
        finally:
            await _release(core)

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
        writes = [rows.EpisodeWrite(episode, rows.encode(vector), structure, names)
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
            core.enricher.later(latest)
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
                    session.rows(rows.PUT_META, key=key, value=value)

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
        enricher = self._open_core().enricher
        return await enricher.everything([e async for e in self.scan(group_ids=group_ids)],
                                         progress)

    async def build_graphiti_indexes(self) -> None:
        """Build graphiti's own full-text indexes, for a graphiti user's ``Graphiti.search``
        over this graph (ours needs none), and keep them from then on: a write drops them
        (Kùzu's full-text index loses rows under rewrites), and ``refresh_graphiti_indexes``
        or closing the graph builds them again. ``BackendUnavailable`` ("no full-text
        extension") on an engine without one."""
        core = self._open_core()
        if not engines.FULL_TEXT[core.engine]:
            raise BackendUnavailable(LAYER, "no full-text extension",
                                     f"{core.engine} does not bundle it (INSTALL FTS downloads "
                                     "it); graphiti's Graphiti.search needs it, ours does not")
        async with core.write_lock:
            await core.write(build_graphiti_indexes, payload=ROW_BYTES * (1 + len(core.index)))
            core.db.meta[GRAPHITI_INDEXES] = FRESH

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
            await _release(core)

    def _open_core(self) -> _Core:
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


async def _acquire(
    path: Path, embedder: AnyEmbedder | None, *, reembed: bool, read_only: bool = False,
    progress: upgrade.Progress | None = None, engine: Engine, llm: Any = None,
) -> _Core:
    key = _key(path)
    loop = asyncio.get_running_loop()
    with _registry:
        core = _cores.get(key)
        if core is not None and core.loop is not loop:
            if not core.loop.is_closed():
                raise BackendUnavailable(LAYER, "busy", "open in another event loop of this "
                                                        "process; share one loop per database")
            # Left open by an event loop that has ended: its waiters can never be woken.
            del _cores[key]
            if core._db is not None:
                core._db.close_now()
            core = None
        creator = core is None
        if core is None:
            core = _cores[key] = _Core(key, embedder or HashingEmbedder(), read_only, engine,
                                       llm)
        core.users += 1
    try:
        if creator:
            try:
                await core.start(reembed=reembed, progress=progress)
            except BaseException as exc:
                core.ready.set_exception(exc)
                core.ready.exception()  # retrieved: waiters (if any) re-raise it themselves
                raise
            core.ready.set_result(None)
        else:
            try:
                async with asyncio.timeout(OPEN_WAIT):
                    await asyncio.shield(core.ready)
            except TimeoutError:
                raise BackendUnavailable(LAYER, "busy", f"still being opened after "
                                                        f"{OPEN_WAIT:.0f} s") from None
            _ensure_same_embedder(core, embedder)
            if core.engine != engine:
                raise BackendUnavailable(LAYER, "engine conflict",
                                         f"open with {core.engine} in this process")
            if core.read_only and not read_only:
                raise BackendUnavailable(LAYER, READ_ONLY, "open read-only in this process")
    except BaseException:
        await _release(core)
        raise
    return core


def _key(path: Path) -> Path:
    return path.expanduser().absolute()


def _ensure_same_embedder(core: _Core, embedder: AnyEmbedder | None) -> None:
    if embedder is not None and (embedder.name, embedder.dimension) != (
        core.embedder.name, core.embedder.dimension
    ):
        raise BackendUnavailable(
            LAYER, "embedder mismatch",
            f"already open in this process with {core.embedder.name}/{core.embedder.dimension}",
        )


async def _release(core: _Core) -> None:
    with _registry:
        core.users -= 1
        last = core.users == 0
        if last and _cores.get(core.directory) is core:
            del _cores[core.directory]
    if last:
        await core.close()

