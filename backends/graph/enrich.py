"""graphiti's LLM extraction (``Graphiti.add_episode``) over free-text memories the graph already
holds, when a user has an LLM: more entities and facts beside the deterministic ones, never
needed for correctness. Importing this module imports graphiti.

- The same ``Enricher`` runs on every database: what differs (graphiti's driver on it, where
  the record is kept, how a result is settled) is a ``Place``: ``kuzu.enrich.KuzuPlace`` (embedded
  Kùzu or LadybugDB), ``falkor.enrich.FalkorPlace`` on a FalkorDB server.
- On an embedded graph, graphiti runs on the database this process holds: its queries go to
  the graph's one worker thread (``SharedKuzuDriver``), between ours; a second
  ``kuzu.Database`` on the path would drop the process's lock.
- Which episode was enriched, at which content, is recorded in the graph
  (``DualmemEnriched``): a run does only what is new or rewritten since, and a graph rebuilt
  from the journal is enriched again.
- One entity per thing: graphiti resolves what it extracts onto the entities already there (its
  exact-name candidates match our names; its vector candidates compare our name embeddings). An
  entity that stays new gets the id our own extractor would give the same name (``_our_id``),
  so a later memory naming it links to the same node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol

from pydantic.warnings import PydanticDeprecatedSince20

from backends.errors import DualmemError, ProviderFailed
from backends.graph.embedder import AnyEmbedder
from backends.graph.graphiti_clients import GraphitiEmbedder
from backends.graph.history import digest
from backends.graph.index import EpisodeIndex
from backends.graph.links import GraphLinks
from backends.model import Episode
from backends.protocol import Enriched
from backends.search.entities import Entity, entity_uuid
from backends.search.text_names import text_entities

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", category=PydanticDeprecatedSince20)
    warnings.filterwarnings("ignore", "The Kuzu backend is deprecated", DeprecationWarning)
    from graphiti_core.cross_encoder.openai_reranker_client import OpenAIRerankerClient
    from graphiti_core.driver.driver import GraphDriver
    from graphiti_core.edges import EntityEdge
    from graphiti_core.graphiti import Graphiti
    from graphiti_core.llm_client.client import LLMClient
    from graphiti_core.nodes import EntityNode, EpisodicNode

log = logging.getLogger(__name__)

_EXISTING = "MATCH (n:Entity) WHERE n.uuid IN $uuids RETURN n.uuid"


def free_text(episode: Episode) -> bool:
    """What the LLM adds to: memories without a structured (JSON) body, whose entities and facts
    the deterministic extraction can only guess at."""
    return episode.data is None


class _Graphiti(Graphiti):
    async def _process_episode_data(
        self, episode: EpisodicNode | list[EpisodicNode], nodes: list[EntityNode],
        entity_edges: list[EntityEdge], *args: Any, **kwargs: Any,
    ) -> Any:
        """Before graphiti saves: the entities it made new take the ids ours would have."""
        driver = self.clients.driver
        found, _, _ = await driver.execute_query(_EXISTING, uuids=[n.uuid for n in nodes])
        existing = {row["n.uuid"] for row in found}
        renamed: dict[str, str] = {}
        for node in nodes:
            if node.uuid in existing:
                continue
            ours = _our_id(node.group_id, node.name)
            if ours is not None:
                renamed[node.uuid] = ours[0]
                node.uuid = ours[0]
                node.labels = ["Entity", ours[1]]
        for edge in entity_edges:
            edge.source_node_uuid = renamed.get(edge.source_node_uuid, edge.source_node_uuid)
            edge.target_node_uuid = renamed.get(edge.target_node_uuid, edge.target_node_uuid)
        return await super()._process_episode_data(episode, nodes, entity_edges, *args, **kwargs)


def _our_id(group_id: str, name: str) -> tuple[str, str] | None:
    """(id, label) our extractor gives ``name`` written in backticks in a memory, if it takes
    it whole: the same node, whichever extraction met it first."""
    for label, found in text_entities(f"`{name}`"):
        if found == name.removeprefix("./"):
            return entity_uuid(group_id, label, found), label
    return None


Progress = Callable[[int, int], None]
"""told (done, total) after each episode"""


class Place(Protocol):
    """Where an ``Enricher`` works: a database graphiti's driver reaches, with the record of
    what was enriched, and the graph layer's search state, which learns what graphiti linked."""

    @property
    def driver(self) -> GraphDriver: ...

    @property
    def embedder(self) -> AnyEmbedder: ...

    @property
    def index(self) -> EpisodeIndex: ...

    @property
    def links(self) -> GraphLinks: ...

    async def recorded(self) -> dict[str, str]:
        """episode id -> the digest of the content it was enriched at"""
        ...

    async def enriched_at(self, episode_id: str) -> str | None:
        """The digest ``episode_id`` was last enriched at, if any."""
        ...

    async def entity_edges(self, episode_id: str) -> list[str] | None:
        """The episode's facts (graphiti's ``entity_edges``); None when it is not held."""
        ...

    async def ready(self) -> None:
        """Make the database ready for graphiti's writes."""
        ...

    def failure(self, exc: Exception) -> DualmemError | None:
        """Our error when ``exc``, raised inside graphiti, is the database's, else None (the
        LLM endpoint's, then)."""
        ...

    async def claim(self, episode: Episode) -> bool:
        """Whether this process may enrich ``episode`` now: no other is at it."""
        ...

    async def release(self, episode: Episode) -> None:
        """Done with ``episode`` (enriched or failed): another process may take it."""
        ...

    async def settle(self, episode: Episode, edges: list[str], new: set[str]) -> None:
        """After graphiti saved: the episode's ``entity_edges`` are ``edges``, one MENTIONS
        edge per entity is left (``doubles``; ``new``: graphiti's), and the episode is
        recorded as enriched at its digest; at once, as far as the database can."""
        ...


def doubles(pairs: Iterable[Sequence[Any]], new: set[str]) -> list[str]:
    """The MENTIONS edges to drop, from (entity, its edges' ids) pairs: graphiti mentions what
    our extraction already links the episode to (or what an interrupted run linked); the first
    edge, ours when there is one, stays."""
    return [uuid for _, edges in pairs for uuid in sorted(edges, key=lambda uuid: uuid in new)[1:]]


class Enricher:
    """graphiti's ``add_episode`` over a ``Place``'s episodes, one at a time: on demand
    (``run``, ``everything``) or in the background after a write (``later``)."""

    def __init__(self, place: Place, llm: LLMClient) -> None:
        self.place = place
        client = getattr(llm, "client", None)
        self.graphiti = _Graphiti(
            graph_driver=place.driver, llm_client=llm,
            embedder=GraphitiEmbedder(place.embedder),
            # Only search recipes that rerank call it; add_episode does not.
            cross_encoder=OpenAIRerankerClient(config=llm.config, client=client),
        )
        self._one_at_a_time = asyncio.Lock()
        self._queue: dict[str, Episode] = {}
        self._task: asyncio.Task[None] | None = None

    def later(self, episodes: Iterable[Episode]) -> None:
        """Enrich the free-text ones among ``episodes`` in the background. A failure is logged
        and ends the round; what is left is due for the next write or ``run``."""
        self._queue.update((e.id, e) for e in episodes if free_text(e))
        if self._queue and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self._queue:
            episode = self._queue.pop(next(iter(self._queue)))
            try:
                await self.one(episode)
            except DualmemError as exc:
                log.warning("LLM enrichment paused (`dualmem enrich` resumes it): %s", exc)
                self._queue.clear()

    async def stop(self) -> None:
        """Cancel the background round: what it had not recorded stays due."""
        task, self._task = self._task, None
        self._queue.clear()
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def due(self, episodes: Iterable[Episode]) -> tuple[list[Episode], int]:
        """The free-text episodes not enriched at their current content, and how many are."""
        done = await self.place.recorded()
        todo, skipped = [], 0
        for episode in episodes:
            if not free_text(episode):
                continue
            if done.get(episode.id) == digest(episode):
                skipped += 1
            else:
                todo.append(episode)
        return todo, skipped

    async def everything(self, episodes: Iterable[Episode],
                         progress: Progress | None = None) -> Enriched:
        """``Enriches.enrich`` over ``episodes``: those due, in order."""
        todo, skipped = await self.due(episodes)
        return await self.run(todo, progress, Enriched(skipped=skipped))

    async def run(self, episodes: Sequence[Episode], progress: Progress | None = None,
                  report: Enriched | None = None) -> Enriched:
        """Enrich ``episodes`` in order, recording each as it is done: a failure leaves what
        was done recorded and raises ``ProviderFailed`` (the endpoint) or ``WriteFailed``."""
        report = report or Enriched()
        for n, episode in enumerate(episodes, 1):
            found = await self.one(episode)
            if found is None:
                report.skipped += 1
            else:
                report.enriched.append(episode.id)
                report.entities += found[0]
                report.facts += found[1]
            if progress is not None:
                progress(n, len(episodes))
        return report

    async def one(self, episode: Episode) -> tuple[int, int] | None:
        """Enrich one free-text episode unless it is enriched at this content (None); returns
        how many entities and facts graphiti linked to it."""
        async with self._one_at_a_time:  # the background and a run never do one twice
            if not free_text(episode) or await self.place.enriched_at(episode.id) == digest(
                    episode):
                return None
            if not await self.place.claim(episode):
                return None  # another process is enriching it: its record will say so
            try:
                # Another may have finished it between our look and our claim.
                if await self.place.enriched_at(episode.id) == digest(episode):
                    return None
                return await self._one(episode)
            finally:
                await self.place.release(episode)

    async def _one(self, episode: Episode) -> tuple[int, int]:
        place = self.place
        await place.ready()
        before = await place.entity_edges(episode.id)
        if before is None:
            return 0, 0  # deleted since it was listed
        try:
            result = await self.graphiti.add_episode(
                name=episode.name, episode_body=episode.body,
                source_description=episode.source, group_id=episode.group_id,
                reference_time=episode.valid_at or episode.created_at, uuid=episode.id)
        except DualmemError:
            raise
        except Exception as exc:  # graphiti's and the SDK's errors alike: the endpoint failed
            ours = place.failure(exc)
            if ours is not None:
                raise ours from exc
            raise ProviderFailed(f"LLM extraction of {episode.id}: "
                                 f"{type(exc).__name__}: {exc}") from exc
        theirs = [edge.uuid for edge in result.edges]
        kept = [*before, *(u for u in theirs if u not in before)]
        await place.settle(episode, kept, {edge.uuid for edge in result.episodic_edges})
        _learn(place, episode, result.nodes, result.edges)
        return len(result.nodes), len(result.edges)


def _learn(place: Place, episode: Episode, nodes: Sequence[EntityNode],
           edges: Sequence[EntityEdge]) -> None:
    """What search follows (``links``): graphiti's mentions and facts, as the rows now hold."""
    if place.index.episode(episode.id) is None:
        return
    place.links.add_mentions(
        episode.id,
        [Entity(node.uuid, next((x for x in node.labels if x != "Entity"), "Entity"), node.name)
         for node in nodes], episode.group_id)
    for edge in edges:
        valid_at: datetime = edge.valid_at or edge.created_at
        place.links.add_fact(edge.uuid, edge.source_node_uuid, edge.target_node_uuid,
                             episode.id, valid_at, edge.invalid_at)
