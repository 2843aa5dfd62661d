"""LLM enrichment (``enrich.Enricher``) on a FalkorDB server: the ``Place`` of a
``FalkorBackend``, made of its collaborators (the connection, the mirror's search state, the
kept record). Importing this module imports graphiti.

graphiti drives the backend's own driver (``driver.OneGraphDriver``). The record of what
was enriched is ``(:DualmemEnriched {uuid, digest})`` on the server, read there each time (other
processes enrich too). Settling a result is one query that also stamps the change feed, so
every process learns the mentions and facts graphiti added (``Mirror.sync``). A lease
on the server keeps two processes from enriching one episode at once: a Redis key taken by a
script (atomic; a Cypher MERGE is not: two at once both create), lapsing by itself.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING, Any

from backends.errors import DualmemError, WriteFailed
from backends.graph.embedder import AnyEmbedder
from backends.graph.enrich import doubles
from backends.graph.falkor import queries, server
from backends.graph.falkor.connection import Connection
from backends.graph.falkor.kept import Kept
from backends.graph.falkor.mirror import Mirror
from backends.graph.history import digest
from backends.graph.index import EpisodeIndex
from backends.graph.links import GraphLinks
from backends.model import Episode

if TYPE_CHECKING:
    from graphiti_core.driver.driver import GraphDriver

LEASE = 600  # seconds: far longer than one episode's extraction takes; a dead holder's lapses
# Taken when free or already this process's (a claim cut short by a cancellation leaves it
# set); given back only by its holder: a lease that lapsed may be another's by now. A Redis
# script runs whole, alone.
_CLAIM = ("local held = redis.call('get', KEYS[1]) if held == false or held == ARGV[1] then"
          " redis.call('set', KEYS[1], ARGV[1], 'EX', ARGV[2]) return 1 end return 0")
_RELEASE = ("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1])"
            " end return 0")


class FalkorPlace:
    def __init__(self, connection: Connection, mirror: Mirror, kept: Kept) -> None:
        self._connection = connection
        self._mirror = mirror
        self._kept = kept
        self._token = uuid.uuid4().hex

    @property
    def driver(self) -> GraphDriver:
        driver: GraphDriver = self._connection.driver
        return driver

    @property
    def embedder(self) -> AnyEmbedder:
        return self._mirror.embedder

    @property
    def index(self) -> EpisodeIndex:
        return self._mirror.index

    @property
    def links(self) -> GraphLinks:
        return self._mirror.links

    async def recorded(self) -> dict[str, str]:
        return await self._kept.enriched()

    async def enriched_at(self, episode_id: str) -> str | None:
        found = await self._connection.run(queries.ENRICHED_AT, uuid=episode_id)
        return found[0]["digest"] if found else None

    async def entity_edges(self, episode_id: str) -> list[str] | None:
        found = await self._connection.run(queries.EDGES, uuid=episode_id)
        return list(found[0]["edges"]) if found else None

    async def ready(self) -> None:
        """FalkorDB's indexes follow graphiti's writes: nothing to do."""

    def failure(self, exc: Exception) -> DualmemError | None:
        """graphiti's queries go to the server straight through the driver: its failures are
        named as the backend's own writes name them."""
        import redis.exceptions

        if isinstance(exc, redis.exceptions.RedisError | OSError):
            return WriteFailed(f"graph layer: {server.translate(self._connection.address, exc)}")
        return None

    async def claim(self, episode: Episode) -> bool:
        try:
            return bool(await self._redis.eval(_CLAIM, 1, self._lease(episode), self._token,
                                               LEASE))
        except Exception as exc:
            raise self.failure(exc) or exc from exc

    async def release(self, episode: Episode) -> None:
        with contextlib.suppress(Exception):  # the server is gone: the lease lapses instead
            await self._redis.eval(_RELEASE, 1, self._lease(episode), self._token)

    @property
    def _redis(self) -> Any:
        """The driver's Redis connection (``redis.asyncio.Redis``)."""
        return self._connection.driver.client.connection

    def _lease(self, episode: Episode) -> str:
        return f"dualmem:enriching:{self._connection.address.graph}:{episode.id}"

    async def settle(self, episode: Episode, edges: list[str], new: set[str]) -> None:
        pairs = await self._connection.run(queries.MENTION_PAIRS, uuid=episode.id)
        await self._connection.run(
            queries.SETTLE, writing=True, uuid=episode.id, edges=edges,
            doubles=doubles(((row["entity"], row["edges"]) for row in pairs), new),
            digest=digest(episode))
