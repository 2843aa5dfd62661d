"""A database whose primary-key index holds keys that no row has, rewritten from its rows.

Kùzu 0.11 leaves such keys in its file when its process is killed while a checkpoint runs (every
``COPY`` checkpoints; measured: about one `kill -9` in 30 during a migration): the rows were
never committed, yet their keys are taken, so writing those ids again fails with "duplicated
primary key" for ever (in a transaction, at its COMMIT), and no statement reaches such a key.
Worse, closing such a database after writes to it can abort the process. What the engine does
offer is a rewrite: ``EXPORT DATABASE`` writes every committed row (and the schema) to files,
``IMPORT DATABASE`` loads them into a new database, whose index holds exactly its rows.

So a database whose last checkpoint was interrupted (its shadow file is left) is rewritten at
open, before anything writes to it; and a write refused for a key no row has rewrites it then
(the damaged database is abandoned, not closed: ``GraphDatabase.abandon``) and is tried again.
The damaged file is kept beside the new one, never deleted.

A graph folder the engine refuses to open is moved aside whole (``move_aside``), but only by one
process at a time, only if it is still the folder whose open failed, and only if no process
holds its database: an open can fail on a file another process is recovering after a kill -9,
and two processes once moved aside, one after the other, the old folder and the new one the
first had made, while live processes kept writing into both.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from backends.errors import WriteFailed
from backends.flock import flocked
from backends.graph.address import Engine
from backends.graph.kuzu import engines, queries

# Kùzu's RuntimeError names the key only in its text (it has no error types or codes).
_DUPLICATE = re.compile(r"Found duplicated primary key value (.+?), which violates")
DAMAGED_SUFFIX = ".damaged-"
KEYED_TABLES = ("Episodic", "Entity", "RelatesToNode_")
"""the tables our writes create rows in by ``uuid``"""


def duplicated_key(exc: BaseException) -> str | None:
    """The key a write failed on as already taken, if that is why it failed."""
    found = _DUPLICATE.search(str(exc))
    return found.group(1) if found else None


def has_row(session: Any, key: str) -> bool:
    """Whether any keyed table has a committed row with ``key``. A scan: a lookup by key goes
    through the damaged index, which can answer with a row that was never committed."""
    return any(session.rows(queries.ROWS_OF_KEY.format(table=table), key=key)[0][0]
               for table in KEYED_TABLES)


def interrupted(file: Path) -> bool:
    """Whether the database's last checkpoint was cut short (Kùzu removes the shadow file of
    pages it was copying in once a checkpoint completes)."""
    return file.with_name(f"{file.name}.shadow").exists()


def rewrite(file: Path, engine: Engine) -> tuple[Path, bool]:
    """Rewrite the (closed) database from its rows: ``replace``'s answer."""
    kuzu = engines.load(engine)
    database = engines.open_database(kuzu, file)
    connection = kuzu.Connection(database)
    try:  # nothing has written to it: closing it is safe
        folder = export(connection.execute, file.parent)
    finally:
        connection.close()
        database.close()
    return replace(file, folder, engine)


def export(run: Callable[[str], object], directory: Path) -> Path:
    """Write every committed row and the schema to a new folder with ``run`` (a statement
    runner of the open database)."""
    folder = Path(tempfile.mkdtemp(prefix=".salvage-", dir=directory))
    if any(c in str(folder) for c in "'\\"):  # the path goes into the statement's text
        folder.rmdir()
        folder = Path(tempfile.mkdtemp(prefix="dualmem-salvage-"))
    if any(c in str(folder) for c in "'\\"):
        folder.rmdir()
        raise WriteFailed(f"graph layer: no folder to rewrite {directory} in without quotes")
    rows = folder / "rows"
    run(f"EXPORT DATABASE '{rows}' (FORMAT='parquet')")
    return folder


def replace(file: Path, folder: Path, engine: Engine) -> tuple[Path, bool]:
    """With the database closed: load ``export``'s ``folder`` into a new database, put it in
    place of ``file`` and move the damaged one aside. Returns where the damaged one is now, and
    whether the full-text indexes it had were left out (Kùzu 0.11 cannot import more than one:
    "default_english_stopwords already exists"; they are to be built again)."""
    try:
        indexes = folder / "rows" / "index.cypher"
        dropped = bool(indexes.read_text(encoding="utf-8").strip())
        indexes.write_text("", encoding="utf-8")
        kuzu = engines.load(engine)
        fresh = folder / file.name
        database = engines.open_database(kuzu, fresh)
        connection = kuzu.Connection(database)
        try:
            connection.execute(f"IMPORT DATABASE '{folder / 'rows'}'")
        finally:
            connection.close()
            database.close()
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        aside = file.with_name(f"{file.name}{DAMAGED_SUFFIX}{stamp}")
        aside.mkdir()
        for part in file.parent.glob(f"{file.name}*"):
            if part.is_file():  # the database and its WAL (and shadow) files
                part.rename(aside / part.name)
        fresh.rename(file)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return aside, dropped


Identity = tuple[int, int]
"""a folder's device and inode: the same folder, whatever its name"""


def identity(directory: Path) -> Identity | None:
    try:
        status = directory.stat()
    except OSError:
        return None
    return status.st_dev, status.st_ino


def move_aside(directory: Path, seen: Identity | None) -> Path | None:
    """Rename the graph folder ``directory``, whose database could not be opened, to
    ``<name>.damaged-<time>`` (kept, never deleted), and return where it is now. None, leaving
    it in place, when it is no longer the folder ``seen`` before the failed open (another
    process moved it and made a new one) or a process holds its database (that process opened
    it: moving it would leave it writing into a folder set aside). One process at a time
    decides (``flocked`` on the home)."""
    with flocked(directory.parent):
        now = identity(directory)
        if now is None or (seen is not None and now != seen):
            return None
        if any(held_elsewhere(directory / name) for name in set(engines.FILES.values())):
            return None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        target = directory.with_name(f"{directory.name}{DAMAGED_SUFFIX}{stamp}")
        directory.rename(target)
        return target


def held_elsewhere(file: Path) -> bool:
    """Whether another process has the database ``file`` open: the engine keeps a POSIX lock on
    it while it does. Only for a file this process does not have open (closing the probe
    releases this process's own POSIX locks on it)."""
    try:
        descriptor = os.open(file, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False  # none there, or not writable by us: no engine of ours holds it either
    try:
        fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(descriptor)
    return False
