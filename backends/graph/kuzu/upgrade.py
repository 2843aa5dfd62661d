"""Bringing a graph written by an older dualmem up to ``SCHEMA_VERSION`` when it is opened for
writing.

Version 1 stored entities from JSON keys only, under other ids (names not folded), and no
facts. Its entities and facts go (nothing else wrote them: graphiti's own extraction never ran
on a version-1 graph), then every episode is linked again from what ``backends.search.entities``
extracts now. The work is bounded: batches of ``BATCH`` episodes, one transaction each, each
recording how far it got, so a killed upgrade resumes at the next open and redoes one batch at
most. Episodes written meanwhile by this version are linked already and skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Protocol, TypeVar

from backends.graph.embedder import AnyEmbedder, structure_vectors
from backends.graph.kuzu import queries, rows
from backends.graph.kuzu.database import SCHEMA_VERSION, Session
from backends.search.entities import extract

log = logging.getLogger(__name__)

T = TypeVar("T")
BATCH = 256
CURSOR = "upgrade_after"
"""meta key: the id of the last episode an upgrade linked ("" once the old entities are gone)"""
PAYLOAD = 2048
"""bytes an episode's links add, about (space.ensure_room)"""
META_BYTES = 512

Progress = Callable[[int, int], None]
"""(episodes linked so far, episodes to link) after each batch"""


class Rows(Protocol):
    """What the upgrade needs of the store's core."""

    embedder: AnyEmbedder

    async def read(self, work: Callable[[Session], T]) -> T: ...

    async def write(self, work: Callable[[Session], T], payload: int) -> T: ...


def outdated(meta: dict[str, str]) -> bool:
    return int(meta.get("schema_version", "0")) < SCHEMA_VERSION


async def upgrade(core: Rows, meta: dict[str, str], progress: Progress | None = None) -> int:
    """Upgrade the graph whose meta is ``meta`` (updated in place); returns how many episodes
    were linked again."""
    if CURSOR not in meta:
        await core.write(_drop_structure, payload=META_BYTES)
        meta[CURSOR] = ""
    after = meta[CURSOR]
    total = await core.read(lambda session: rows.count_after(session, after))
    done = 0
    log.info("upgrading the graph to schema %d: linking %d episodes", SCHEMA_VERSION, total)
    while True:
        batch = await core.read(partial(rows.unlinked, after=after, limit=BATCH))
        if not batch:
            break
        structures = [extract(episode) for episode in batch]
        writes = [rows.EpisodeWrite(episode, "", structure, named)
                  for episode, structure, named in zip(
                      batch, structures, await structure_vectors(core.embedder, structures),
                      strict=True)]
        after = batch[-1].id
        await core.write(_step(writes, {CURSOR: after}), payload=PAYLOAD * len(writes))
        meta[CURSOR] = after
        done += len(batch)
        log.info("upgrading the graph: %d/%d episodes linked", done, total)
        if progress is not None:
            progress(done, total)
    await core.write(_finish, payload=META_BYTES)
    del meta[CURSOR]
    meta["schema_version"] = str(SCHEMA_VERSION)
    return done


def _step(writes: list[rows.EpisodeWrite], meta: dict[str, str]
          ) -> Callable[[Session], None]:
    return lambda session: rows.link_episodes(session, writes, meta)


def _drop_structure(session: Session) -> None:
    with session.transaction():
        session.rows(queries.DROP_FACT_NODES)
        session.rows(queries.DROP_ENTITIES)
        session.rows(queries.PUT_META, key=CURSOR, value="")


def _finish(session: Session) -> None:
    with session.transaction():
        session.rows(queries.PUT_META, key="schema_version", value=str(SCHEMA_VERSION))
        session.rows(queries.DROP_META, key=CURSOR)

