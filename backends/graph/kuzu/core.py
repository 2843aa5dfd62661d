"""What every handle on one embedded graph in this process shares: the ``Core`` (database,
search index, links, write lock) and the registry that opens it once per path and closes it
with its last handle (``acquire``, ``release``)."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from backends.errors import (
    OUT_OF_RESOURCES,
    BackendUnavailable,
    DualmemError,
    StoreCorrupt,
    WriteFailed,
)
from backends.graph import shared
from backends.graph.address import DEFAULT_ENGINE, Engine
from backends.graph.embedder import (
    AnyEmbedder,
    HashingEmbedder,
    Vectors,
    embed,
)
from backends.graph.index import Entry, EpisodeIndex
from backends.graph.kuzu import engines, queries, rows, salvage, space, upgrade
from backends.graph.kuzu.database import (
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
from backends.graph.links import GraphLinks
from backends.graph.stored import decode, encode
from backends.model import (
    Episode,
    now,
)
from backends.search.entities import extract
from backends.search.ranking import search_text

if TYPE_CHECKING:
    from backends.graph.enrich import Enricher

log = logging.getLogger(__name__)

T = TypeVar("T")
OPEN_WAIT = 120.0
"""seconds a second opener in this process waits for the first to finish opening"""
# How Kùzu begins the message of a failed file write (a full disk, a file-size limit): its
# RuntimeError has no type or code of its own, the text is all it gives.
_IO_FAILURE = "IO exception"
ROW_BYTES = 512
"""what a row costs beside its text: columns, keys, index entries"""
INDEX_TOKEN = "index_token"
"""meta key: the token of the index file built for this graph (``index.EpisodeIndex``)"""


class Core:
    """What every handle on one database shares."""

    def __init__(self, directory: Path, embedder: AnyEmbedder, read_only: bool = False,
                 engine: Engine = DEFAULT_ENGINE, llm: Any = None) -> None:
        self.directory = directory
        self.engine = engine
        self.embedder = embedder
        self.llm = llm
        """graphiti's ``LLMClient`` for enrichment (enrich.py), or None"""
        self.enricher: Enricher | None = None
        """set by the first handle that enriches (``GraphBackend.enricher``)"""
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

    async def enriched(self) -> dict[str, str]:
        """Episode id -> the digest it was enriched at (``rows.enriched``), read once: only
        this process writes the record."""
        if self._enriched is None:
            self._enriched = await self.read(rows.enriched)
        return self._enriched

    async def close(self) -> None:
        if self.enricher is not None:
            await self.enricher.stop()
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

    async def index_for_graphiti(self) -> None:
        """Build graphiti's full-text indexes now, and keep them from then on (``unindex`` and
        ``reindex``); ``BackendUnavailable`` on an engine without the extension."""
        if not engines.FULL_TEXT[self.engine]:
            raise BackendUnavailable(LAYER, "no full-text extension",
                                     f"{self.engine} does not bundle it (INSTALL FTS downloads "
                                     "it); graphiti's Graphiti.search needs it, ours does not")
        async with self.write_lock:
            await self.write(build_graphiti_indexes, payload=ROW_BYTES * (1 + len(self.index)))
            self.db.meta[GRAPHITI_INDEXES] = FRESH

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
        # ValueError: a row that is no valid Episode. OSError: the driver imports a module
        # (decimal) on its first query, which needs a file handle too (``ulimit -n``).
        except (RuntimeError, ValueError, OSError, MemoryError) as exc:
            if exhausted(exc):  # a sound database this process cannot read now
                raise BackendUnavailable(LAYER, OUT_OF_RESOURCES, str(exc)) from exc
            if isinstance(exc, OSError | MemoryError):
                raise  # not the database's: nothing says it is damaged
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
                  for setter, query in ((queries.SET_NAME_EMBEDDING, queries.ENTITY_NAMES),
                                        (queries.SET_FACT_EMBEDDING, queries.FACT_TEXTS))]
        fresh = [(setter, key, vector.tolist()) for setter, found in others if found
                 for (key, _), vector in zip(
                     found, await embed(self.embedder, [t for _, t in found]), strict=True)]

        def record(session: Session) -> None:
            with session.transaction():
                for episode, vector in zip(stored, vectors, strict=True):
                    session.rows(queries.SET_EMBEDDING, uuid=episode.id, embedding=encode(vector))
                for setter, key, vector in fresh:
                    session.rows(setter, uuid=key, embedding=vector)
                for key, value in want.items():
                    session.rows(queries.PUT_META, key=key, value=value)

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
            vectors = [decode(row.vector, self.embedder.dimension) for row in stored]
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
        mentions = await self.read(lambda session: session.rows(queries.MENTION_COLUMNS))
        facts = await self.read(lambda session: session.rows(queries.FACT_COLUMNS))
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
                session.rows(queries.PUT_META, key=INDEX_TOKEN, value=token)

        await self.write(record, payload=ROW_BYTES)
        self.db.meta[INDEX_TOKEN] = token

    def remember(self, written: Sequence[tuple[Episode, Vectors]]) -> None:
        self.index.put([Entry(episode, search_text(episode), vector)
                        for episode, vector in written])

    def forget(self, key: str) -> None:
        self.index.drop(key)
        self.links.drop(key)


_cores: dict[Path, Core] = {}
_registry = threading.Lock()


def _close_leftovers() -> None:
    # A process that exits without aclose must still close Kùzu in order (never a segfault).
    for core in list(_cores.values()):
        if core._db is not None:
            core._db.close_now()


atexit.register(_close_leftovers)


async def acquire(
    path: Path, embedder: AnyEmbedder | None, *, reembed: bool, read_only: bool = False,
    progress: upgrade.Progress | None = None, engine: Engine, llm: Any = None,
) -> Core:
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
            core = _cores[key] = Core(key, embedder or HashingEmbedder(), read_only, engine,
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
        await release(core)
        raise
    return core


def _key(path: Path) -> Path:
    return path.expanduser().absolute()


def _ensure_same_embedder(core: Core, embedder: AnyEmbedder | None) -> None:
    if embedder is not None and (embedder.name, embedder.dimension) != (
        core.embedder.name, core.embedder.dimension
    ):
        raise BackendUnavailable(
            LAYER, "embedder mismatch",
            f"already open in this process with {core.embedder.name}/{core.embedder.dimension}",
        )


async def release(core: Core) -> None:
    with _registry:
        core.users -= 1
        last = core.users == 0
        if last and _cores.get(core.directory) is core:
            del _cores[core.directory]
    if last:
        await core.close()

