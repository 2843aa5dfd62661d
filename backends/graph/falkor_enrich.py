"""LLM enrichment (``enrich.Enricher``) on a FalkorDB server: the ``Place`` of a
``FalkorBackend``, its helper (it reaches the backend's queries and search state). Importing
this module imports graphiti.

graphiti drives the backend's own driver (``falkor_driver.OneGraphDriver``). The record of what
was enriched is ``(:DualmemEnriched {uuid, digest})`` on the server, read there each time (other
processes enrich too). Settling a result is one query that also stamps the change feed, so
every process learns the mentions and facts graphiti added (``FalkorBackend._sync``). A lease
on the server keeps two processes from enriching one episode at once: a Redis key taken by a
script (atomic; a Cypher MERGE is not: two at once both create), lapsing by itself.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING, Any

from backends.errors import DualmemError, WriteFailed
from backends.graph import server
from backends.graph.embedder import AnyEmbedder
from backends.graph.enrich import doubles
from backends.graph.falkor import SETTLE, FalkorBackend
from backends.graph.history import digest
from backends.graph.index import EpisodeIndex
from backends.graph.links import GraphLinks
from backends.model import Episode

if TYPE_CHECKING:
    from graphiti_core.driver.driver import GraphDriver

_ENRICHED_AT = "MATCH (d:DualmemEnriched {uuid: $uuid}) RETURN d.digest AS digest"
_EDGES = ("MATCH (e:Episodic {uuid: $uuid}) WHERE e.kind IS NOT NULL"
          " RETURN coalesce(e.entity_edges, []) AS edges")
LEASE = 600  # seconds: far longer than one episode's extraction takes; a dead holder's lapses
# Taken when free or already this process's (a claim cut short by a cancellation leaves it
# set); given back only by its holder: a lease that lapsed may be another's by now. A Redis
# script runs whole, alone.
_CLAIM = ("local held = redis.call('get', KEYS[1]) if held == false or held == ARGV[1] then"
          " redis.call('set', KEYS[1], ARGV[1], 'EX', ARGV[2]) return 1 end return 0")
_RELEASE = ("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1])"
            " end return 0")
_MENTION_PAIRS = ("MATCH (e:Episodic {uuid: $uuid})-[r:MENTIONS]->(n:Entity)"
                  " RETURN n.uuid AS entity, collect(r.uuid) AS edges")


class FalkorPlace:
    def __init__(self, backend: FalkorBackend) -> None:
        self.backend = backend
        self._token = uuid.uuid4().hex

    @property
    def driver(self) -> GraphDriver:
        driver: GraphDriver = self.backend._open_driver()
        return driver

    @property
    def embedder(self) -> AnyEmbedder:
        return self.backend._embedder

    @property
    def index(self) -> EpisodeIndex:
        return self.backend._index

    @property
    def links(self) -> GraphLinks:
        return self.backend._links

    async def recorded(self) -> dict[str, str]:
        return await self.backend.enriched()

    async def enriched_at(self, episode_id: str) -> str | None:
        found = await self.backend._run(_ENRICHED_AT, uuid=episode_id)
        return found[0]["digest"] if found else None

    async def entity_edges(self, episode_id: str) -> list[str] | None:
        found = await self.backend._run(_EDGES, uuid=episode_id)
        return list(found[0]["edges"]) if found else None

    async def ready(self) -> None:
        """FalkorDB's indexes follow graphiti's writes: nothing to do."""

    def failure(self, exc: Exception) -> DualmemError | None:
        """graphiti's queries go to the server straight through the driver: its failures are
        named as the backend's own writes name them."""
        import redis.exceptions

        if isinstance(exc, redis.exceptions.RedisError | OSError):
            return WriteFailed(f"graph layer: {server.translate(self.backend.address, exc)}")
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
        return self.backend._open_driver().client.connection

    def _lease(self, episode: Episode) -> str:
        return f"dualmem:enriching:{self.backend.address.graph}:{episode.id}"

    async def settle(self, episode: Episode, edges: list[str], new: set[str]) -> None:
        pairs = await self.backend._run(_MENTION_PAIRS, uuid=episode.id)
        await self.backend._run(
            SETTLE, writing=True, uuid=episode.id, edges=edges,
            doubles=doubles(((row["entity"], row["edges"]) for row in pairs), new),
            digest=digest(episode))
