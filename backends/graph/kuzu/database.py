"""A Kùzu (or LadybugDB: ``engines.py``) database folder: open (driver errors translated into
ours), graphiti's schema plus our columns, the meta table, and a close that cannot segfault.

Kùzu allows one read-write process per database, and within a process a second
``kuzu.Database`` on the same path takes no lock of its own and drops the process's lock when it
is closed: never build two for one path (``core.py`` keeps a registry). All calls run on one
worker thread with one connection: Kùzu fails concurrent writes, and a connection is not meant
to be shared between threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from backends import processes
from backends.errors import (
    OUT_OF_RESOURCES,
    BackendUnavailable,
    FileRefused,
    WriteFailed,
    out_of_resources,
)
from backends.graph.address import DEFAULT_ENGINE, Engine
from backends.graph.kuzu import engines, queries, salvage, space
from backends.graph.kuzu.graphiti_schema import graphiti_schema
from backends.safe_files import NOTE_LIMIT, overwrite, read_regular, refuse_links_in

LAYER = "graph"
NO_ROOM = "no room"
"""The reason of a ``BackendUnavailable`` for a database that cannot be opened for writing
because its disk is full (opening writes); it can still be read (``read_only``)."""
READ_ONLY = "read-only"
"""The reason of a ``BackendUnavailable`` for a database this process may read but not write
(a read-only volume or checkout); ``GraphBackend.open(..., read_only=True)`` then reads it."""
ANOTHER_ENGINE = "another engine's database"
"""The reason of a ``BackendUnavailable`` for a database file written by the other embedded
engine (``engines.py``)."""
REFUSED = "refused"
"""The reason of a ``BackendUnavailable`` for a graph folder that is, or holds, a symbolic link:
the database engine would follow it and write where it leads, out of the home."""
DB_FILE = engines.FILES[DEFAULT_ENGINE]
OWNER_FILE = "owner.json"
COPY_FILE_PREFIX = ".bulk-"
"""temporary files of ``rows.copy_episodes``, beside the database"""
SCHEMA_VERSION = 2
"""1: episodes, entities from JSON keys; 2: entities under folded names, from text too, and
facts (upgrade.py brings a version-1 graph up to date)"""
INSTALL_HINT = engines.INSTALL_HINTS[DEFAULT_ENGINE]

# Ours, added to graphiti's Episodic table. graphiti's `source` holds its EpisodeType and its
# `valid_at` must be set, so our source goes to `source_description` and `valid_at_set` tells
# whether `valid_at` is ours or the created_at stand-in.
# Vectors are stored as base64 float16 text: a FLOAT[] parameter costs Kùzu a value per element,
# which cut the raw write rate by 60% at 128 dimensions (bench/graph_layer.py); text costs ~5%.
_EPISODIC_EXTRA = (
    "kind STRING", "invalid_at TIMESTAMP", "valid_at_set BOOLEAN", "embedding_f16 STRING"
)
_NOT_WRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
# Kùzu (and LadybugDB) raise every error as a bare RuntimeError, with no type or code of its
# own: where their message says the process ran out of something, it is not the file's damage.
# Measured under `ulimit -v 4G`: "Buffer manager exception: Mmap for size 8796093022208 failed."
_EXHAUSTED_SAYS = ("Buffer manager exception", "Mmap for size", "bad_alloc",
                   "Cannot allocate memory", "Too many open files", "File too large",
                   "out of memory", "Out of memory")

T = TypeVar("T")
log = logging.getLogger(__name__)
_ABANDONED: list[tuple[Any, Any]] = []


class Session:
    """The connection, as seen from the worker thread."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection
        self._statements: dict[str, Any] = {}

    def rows(self, query: str, **params: Any) -> list[list[Any]]:
        statement = self._statements.get(query)
        if statement is None:
            # kuzu 0.11 deprecates prepare() in favour of execute(query, params), which re-plans
            # every call and halves the write rate; a prepared plan per query is worth keeping.
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "The use of separate prepare", DeprecationWarning)
                statement = self._statements[query] = self._connection.prepare(query)
        result = self._connection.execute(statement, params)
        try:
            return list(result.get_all())
        finally:
            result.close()  # a live result at db.close() segfaults

    def dicts(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """A query not worth preparing (graphiti's own, built per call), rows as dicts."""
        results = self._connection.execute(query, params)
        found: list[dict[str, Any]] = []
        for result in results if isinstance(results, list) else [results]:
            try:
                found += result.rows_as_dict().get_all()
            finally:
                result.close()
        return found

    def script(self, queries: str) -> None:
        results = self._connection.execute(queries)
        for result in results if isinstance(results, list) else [results]:
            result.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        self.script("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            # Kùzu rolls a transaction back itself when a statement in it fails; then ROLLBACK
            # fails too ("No active transaction"), and the first error is the one to report.
            with contextlib.suppress(RuntimeError):
                self.script("ROLLBACK")
            raise
        self.script("COMMIT")


class GraphDatabase:
    """One open Kùzu database under ``directory`` (``<home>/graph``)."""

    def __init__(self, directory: Path, executor: ThreadPoolExecutor, session: Session,
                 database: Any, meta: dict[str, str], read_only: str | None = None,
                 engine: Engine = DEFAULT_ENGINE) -> None:
        self.directory = directory
        self.engine = engine
        self.meta = meta
        self.read_only = read_only
        """None when writable; else why it was opened for reading only"""
        self._executor = executor
        self._session: Session | None = session
        self._database = database

    @property
    def file(self) -> Path:
        return self.directory / engines.FILES[self.engine]

    @classmethod
    async def connect(cls, directory: Path, *, read_only: bool = False,
                      engine: Engine | None = None) -> GraphDatabase:
        """Open or create the database (``read_only``: open an existing one for reading only)
        with ``engine`` (default: ``engines.default``); raises ``BackendUnavailable`` with the
        reason."""
        engine = engine or engines.default
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dualmem-kuzu")
        loop = asyncio.get_running_loop()
        try:
            database, session, meta = await loop.run_in_executor(
                executor, partial(_connect, directory, read_only=read_only, engine=engine)
            )
        except OSError as exc:  # the folder's housekeeping, past the engine's open
            executor.shutdown(wait=False)
            reason = OUT_OF_RESOURCES if out_of_resources(exc) else "unreadable"
            raise BackendUnavailable(LAYER, reason, f"{directory}: {exc.strerror}") from exc
        except BaseException:
            executor.shutdown(wait=False)
            raise
        why = _why_not_writable(directory / engines.FILES[engine]) if read_only else None
        return cls(directory, executor, session, database, meta, why, engine)

    async def run(self, work: Callable[[Session], T]) -> T:
        """Run ``work`` on the worker thread; the caller translates driver errors."""
        session = self._session
        if session is None:
            raise BackendUnavailable(LAYER, "closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, work, session)

    async def close(self) -> None:
        """Close the connection and the database, releasing the lock. Idempotent."""
        session, self._session = self._session, None
        if session is None:
            return
        # Closing the database while a query result is alive segfaults. Session closes every
        # result as soon as it is read, so no gc.collect() is needed here (it cost 0.1-0.25 s
        # per close in a process that has imported graphiti); tests/graph stress this.
        await asyncio.sleep(0)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, _disconnect, session, self._database,
                                   self._owner_file)
        self._executor.shutdown(wait=False)

    def abandon(self) -> None:
        """Leave the database open for good, never to be closed or used again: closing one
        whose key index is damaged, after writes, aborts the process (salvage.py). Its native
        objects are kept alive until the process ends, so that no destructor closes it either;
        the lock it holds is on a file moved aside by then."""
        import ctypes  # here: only a damaged database needs it

        session, self._session = self._session, None
        if session is not None:
            session._statements.clear()
            _ABANDONED.append((session._connection, self._database))
            for native in (session._connection._connection, self._database._database):
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(native))  # outlives interpreter exit
        self._executor.shutdown(wait=False)

    def close_now(self) -> None:
        """At interpreter exit, when no event loop is left: the same close, synchronously."""
        session, self._session = self._session, None
        if session is not None:  # the worker thread is already gone at exit
            _disconnect(session, self._database, self._owner_file)

    @property
    def _owner_file(self) -> Path | None:
        return None if self.read_only is not None else self.directory / OWNER_FILE


def _connect(directory: Path, *, read_only: bool,
             engine: Engine) -> tuple[Any, Session, dict[str, str]]:
    kuzu = engines.load(engine)
    file = directory / engines.FILES[engine]
    try:
        refuse_links_in(directory)
    except FileRefused as exc:
        raise BackendUnavailable(LAYER, REFUSED, str(exc)) from exc
    if read_only and not file.is_file():
        raise BackendUnavailable(LAYER, READ_ONLY,
                                 f"{file} does not exist and cannot be made here")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = READ_ONLY if exc.errno in _NOT_WRITABLE else "unreadable"
        raise BackendUnavailable(LAYER, reason, f"{directory}: {exc.strerror}") from exc
    if not read_only:
        _ensure_room_to_open(file)
    rewritten_without_indexes = (not read_only and salvage.interrupted(file)
                                 and _rewrite(file, engine))
    try:
        database = engines.open_database(kuzu, file, read_only=read_only)
    except (RuntimeError, OSError, MemoryError) as exc:
        raise _open_error(file, exc, engine) from exc
    session = Session(kuzu.Connection(database))
    owner_file = None if read_only else directory / OWNER_FILE  # a reader holds nothing
    try:
        meta = _ensure_schema(session)
        if rewritten_without_indexes:
            session.rows(queries.PUT_META, key=GRAPHITI_INDEXES, value=STALE)
            meta[GRAPHITI_INDEXES] = STALE
    except BackendUnavailable:
        _disconnect(session, database, owner_file)
        raise
    except (RuntimeError, OSError, MemoryError) as exc:
        _disconnect(session, database, owner_file)
        reason = OUT_OF_RESOURCES if exhausted(exc) else "corrupt"
        raise BackendUnavailable(LAYER, reason, _first_line(exc)) from exc
    if owner_file is not None:
        _write_owner(owner_file)
        _remove_dead_copy_files(directory)
    return database, session, meta


def _rewrite(file: Path, engine: Engine) -> bool:
    """A database whose last checkpoint was cut short, rewritten from its rows (salvage.py);
    when it cannot be (no room), opened as it is: a write that meets a damaged key still
    rewrites it (core.py). Returns whether graphiti's full-text indexes are to be rebuilt."""
    try:
        space.ensure_room(file.parent, payload=2 * file.stat().st_size)
        aside, dropped = salvage.rewrite(file, engine)
    except (WriteFailed, OSError, RuntimeError) as exc:
        log.warning("%s: its last checkpoint was cut short, and it could not be rewritten "
                    "(%s); opening it as it is", file, exc)
        return False
    log.warning("%s: its last checkpoint was cut short (a process killed); rewrote it from its "
                "rows, the file as it was is in %s", file, aside)
    return dropped


def _remove_dead_copy_files(directory: Path) -> None:
    """The COPY files of a writer killed mid-batch (rows.copy_episodes removes its own): holding
    the database read-write, no other process is writing one now."""
    with contextlib.suppress(OSError):  # housekeeping: the next holder tries again
        for leftover in directory.glob(f"{COPY_FILE_PREFIX}*"):
            leftover.unlink()


def _ensure_room_to_open(file: Path) -> None:
    """Opening writes: a new database its schema, an old one its WAL into the database file
    (space.py: Kùzu must never meet a full disk)."""
    try:
        if file.is_file():
            space.ensure_room(file.parent, payload=0)
        else:
            space.ensure_room_to_create(file.parent)
    except WriteFailed as exc:
        raise BackendUnavailable(LAYER, NO_ROOM, str(exc)) from exc


def _disconnect(session: Session, database: Any, owner_file: Path | None) -> None:
    session._statements.clear()
    session._connection.close()
    database.close()
    if owner_file is not None:
        with contextlib.suppress(OSError):
            owner_file.unlink()


def exhausted(exc: BaseException) -> bool:
    """Whether ``exc`` says the process ran out of memory, address space or file handles (or
    met its file size limit), rather than that the database is damaged: by type and errno
    where there is one, else by the engine's message (it has no types of its own)."""
    if isinstance(exc, MemoryError | OSError):
        return out_of_resources(exc)
    return isinstance(exc, RuntimeError) and any(says in str(exc) for says in _EXHAUSTED_SAYS)


def _open_error(file: Path, exc: BaseException, engine: Engine) -> BackendUnavailable:
    message = _first_line(exc)
    if exhausted(exc):
        return BackendUnavailable(LAYER, OUT_OF_RESOURCES, message)
    if isinstance(exc, OSError):
        reason = READ_ONLY if exc.errno in _NOT_WRITABLE else "unreadable"
        return BackendUnavailable(LAYER, reason, message)
    # Kùzu and LadybugDB raise RuntimeError for every failure, with no code or errno: the
    # message is all they give (here and below).
    if "Could not set lock" in message:
        owner = owner_pid(file.parent)
        return BackendUnavailable(
            LAYER, "locked by another process", f"pid {owner}" if owner else str(file.parent)
        )
    other = engines.written_by_another(file, engine)
    if other is not None:
        # Kùzu's file opened with LadybugDB or the reverse: not damage, never to be rebuilt.
        return BackendUnavailable(LAYER, ANOTHER_ENGINE,
                                  f"{file} is a {other} database; open it with {other}")
    if "Read-only file system" in message or (
        "Permission denied" in message and os.access(file, os.R_OK)
    ):
        return BackendUnavailable(LAYER, READ_ONLY, message)
    if "Permission denied" in message:
        return BackendUnavailable(LAYER, "unreadable", message)
    return BackendUnavailable(LAYER, "corrupt", message)


def _why_not_writable(file: Path) -> str:
    try:
        if os.statvfs(file.parent).f_flag & os.ST_RDONLY:
            return os.strerror(errno.EROFS)
    except OSError as exc:
        return exc.strerror or str(exc)
    if not os.access(file, os.W_OK) or not os.access(file.parent, os.W_OK):
        return os.strerror(errno.EACCES)
    return "opened read-only"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _write_owner(owner_file: Path) -> None:
    # Kùzu's lock does not say who holds it; this note lets the next opener name the pid.
    with contextlib.suppress(OSError, FileRefused):
        overwrite(owner_file, json.dumps({"pid": os.getpid()}).encode())


def owner_pid(directory: Path) -> int | None:
    """The live process holding the database under ``directory`` read-write, when it said so."""
    try:
        note = read_regular(directory / OWNER_FILE, limit=NOTE_LIMIT, follow=False)
        pid = int(json.loads(note)["pid"])
    except (OSError, ValueError, KeyError, TypeError):  # FileRefused too: a link, not a note
        return None
    return pid if pid > 0 and processes.alive(pid) else None


def _ensure_schema(session: Session) -> dict[str, str]:
    """graphiti's tables on first open (its DDL, read from its source), our columns and meta."""
    tables = {row[0] for row in session.rows(queries.TABLES)}
    if "DualmemMeta" in tables:
        meta = {key: value for key, value in session.rows(queries.META)}
        if int(meta.get("schema_version", "0")) > SCHEMA_VERSION:
            raise BackendUnavailable(LAYER, "unsupported schema",
                                     f"version {meta['schema_version']}; upgrade dualmem")
        return meta
    # Every statement is idempotent and the meta row comes last: a crash half-way through
    # is finished by the next open.
    session.script(graphiti_schema(INSTALL_HINT))
    for column in _EPISODIC_EXTRA:
        session.script(queries.ADD_EPISODIC_COLUMN.format(column=column))
    session.script(queries.META_TABLE)
    session.rows(queries.CREATE_SCHEMA_VERSION, v=str(SCHEMA_VERSION))
    return {"schema_version": str(SCHEMA_VERSION)}


GRAPHITI_FTS = (
    ("Episodic", "episode_content", ("content", "source", "source_description")),
    ("Entity", "node_name_and_summary", ("name", "summary")),
    ("Community", "community_name", ("name",)),
    ("RelatesToNode_", "edge_name_and_fact", ("name", "fact")),
)
"""graphiti's full-text indexes on Kùzu (``graph_queries.get_fulltext_indices``), which its
``Graphiti.search`` queries. Our own search never reads them."""


GRAPHITI_INDEXES = "graphiti_indexes"
"""meta key: absent (never asked for), ``FRESH`` (they hold every row) or ``STALE`` (dropped
by a write since, due to be rebuilt)"""
FRESH, STALE = "fresh", "stale"


def build_graphiti_indexes(session: Session) -> None:
    """Build graphiti's full-text indexes anew from the rows, and record them fresh."""
    drop_graphiti_indexes(session, state=None)
    for table, name, columns in GRAPHITI_FTS:
        fields = ", ".join(f"'{column}'" for column in columns)
        session.script(queries.CREATE_FTS_INDEX.format(table=table, name=name, fields=fields))
    session.rows(queries.PUT_META, key=GRAPHITI_INDEXES, value=FRESH)


def drop_graphiti_indexes(session: Session, state: str | None = STALE) -> None:
    """Drop graphiti's full-text indexes (recording ``state``). Kùzu 0.11's full-text index
    loses documents under MERGE, SET and DELETE (measured: 400 deletes of 4000 rows lost 730
    documents), and maintaining it triples the cost of a rewrite: a write drops them (graphiti's
    search then fails, saying so, instead of missing rows), and they are rebuilt once the
    writing is done (core.py)."""
    existing = {row[1] for row in session.rows(queries.INDEXES)}
    for table, name, _ in GRAPHITI_FTS:
        if name in existing:
            session.script(queries.DROP_FTS_INDEX.format(table=table, name=name))
    if state is not None:
        session.rows(queries.PUT_META, key=GRAPHITI_INDEXES, value=state)
