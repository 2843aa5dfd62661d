"""What a FalkorDB server's graph keeps beside its episodes and hands to another graph: the facts
rewrites retired (history), and what graphiti's LLM extraction added (enrichments), read and
written back under the change feed (``mirror.py``) so every process learns them."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Any

from backends.graph import shared
from backends.graph.falkor import queries
from backends.graph.falkor.connection import Connection
from backends.graph.falkor.mirror import Mirror
from backends.graph.falkor.queries import plain, text
from backends.graph.falkor.rows import time_of
from backends.graph.history import Enrichment, KeptFact
from backends.model import now
from backends.search.entities import Entity


class Kept:
    """The history and enrichments of one connection's graph."""

    def __init__(self, connection: Connection, mirror: Mirror) -> None:
        self._connection = connection
        self._mirror = mirror

    async def retired_facts(self, episodes: Collection[str] | None = None) -> list[KeptFact]:
        """The facts rewrites retired and this graph keeps as history (of ``episodes`` only,
        when given), each with the content its memory is at."""
        await self._mirror.sync()  # the content is the server's
        run = self._connection.run
        if episodes is None:
            found = await run(queries.RETIRED)
        else:
            found = await run(queries.RETIRED_OF, episodes=list(episodes))
        return shared.at_content(
            self._mirror.index,
            [_kept(row, row["episode"], time_of(row["expired_at"])) for row in found])

    async def keep_history(self, facts: Sequence[KeptFact]) -> int:
        """Write the retired facts (of another graph) this one lacks beside their episodes, and
        retire again those of memories at the content they were retired at; those of episodes
        it does not hold are left. Returns how many were written."""
        await self._mirror.sync()
        vectors = await shared.kept_vectors(self._mirror.embedder, facts)
        again = shared.retired_again(self._mirror.index, facts)
        written = [fact for fact in facts
                   if (fact.uuid in again and await self._retire_kept(fact))
                   or await self._keep_fact(fact, vectors)]
        shared.learn_history(self._mirror.links, written)
        return len(written)

    async def _retire_kept(self, fact: KeptFact) -> bool:
        """Retire ``fact`` as kept where its episode states it; True when it did."""
        assert fact.expired_at is not None  # of ``again``: retired facts only
        found = await self._connection.run(
            queries.RETIRE_KEPT.format(stamp=queries.STAMP.format(carry="e")), writing=True,
            uuid=fact.episode, fact_id=fact.uuid, expired_at=text(fact.expired_at),
            invalid_at=text(fact.invalid_at or fact.expired_at))
        return bool(found)

    async def _keep_fact(self, fact: KeptFact, vectors: dict[str, list[float]]) -> bool:
        """Write ``fact`` with its ends beside its episode, unless the episode is not here or
        already knows it; True when written."""
        query = queries.KEEP.format(stamp=queries.STAMP.format(carry="e"), ends=" ".join(
            queries.END.format(end=side, label=plain(entity.label))
            for side, entity in (("a", fact.source), ("b", fact.target))))
        found = await self._connection.run(
            query, writing=True, uuid=fact.episode, fact_id=fact.uuid,
            group_id=fact.group_id, created_at=text(fact.created_at), name=fact.name,
            fact=fact.fact, vector=vectors[fact.uuid], valid_at=text(fact.valid_at),
            invalid_at=text(fact.invalid_at) if fact.invalid_at else None,
            expired_at=text(fact.expired_at) if fact.expired_at else None,
            a=_end_value(fact.source, vectors), b=_end_value(fact.target, vectors))
        return bool(found)

    async def enriched(self) -> dict[str, str]:
        """Episode id -> the digest of the content graphiti's extraction last ran on, by any
        process (enrich.py)."""
        return {row["uuid"]: row["digest"]
                for row in await self._connection.run(queries.ENRICHED)}

    async def enrichments(self, keys: Iterable[str]) -> list[Enrichment]:
        """What graphiti's extraction added to each of these memories, for those enriched at
        the content held now."""
        await self._mirror.sync()
        run = self._connection.run

        async def linked(key: str) -> shared.Linked:
            mentions = [Entity(row["uuid"], row["label"], row["name"], row["summary"])
                        for row in await run(queries.MENTIONS_OF, uuid=key)]
            return mentions, [_kept(row, key, None)
                              for row in await run(queries.CURRENT_FACTS, uuid=key)]

        return await shared.enrichments(self._mirror.index, await self.enriched(), keys, linked)

    async def keep_enrichments(self, found: Sequence[Enrichment]) -> int:
        """Write back what an enrichment found, for the memories held at the content it was
        made from, and record them as enriched: no process asks graphiti again. Returns how
        many were written."""
        await self._mirror.sync()
        due = shared.current(self._mirror.index, found)
        vectors = await shared.kept_vectors(
            self._mirror.embedder, (fact for item in due for fact in item.facts),
            (entity for item in due for entity in item.mentions))
        at = text(now())
        run = self._connection.run
        for item in due:
            for entity in item.mentions:
                await run(
                    queries.KEEP_MENTION.format(
                        end=queries.END.format(end="a", label=plain(entity.label)),
                        stamp=queries.STAMP.format(carry="e")),
                    writing=True, uuid=item.episode, mention=f"{item.episode}:{entity.uuid}",
                    group_id=item.group_id, created_at=at, a=_end_value(entity, vectors))
            for fact in item.facts:
                await self._keep_fact(fact, vectors)
            await run(queries.RECORD_ENRICHED, writing=True, uuid=item.episode,
                      digest=item.digest)
        shared.learn_enrichments(self._mirror.links, due)
        return len(due)


def _end_value(entity: Entity, vectors: dict[str, list[float]]) -> dict[str, Any]:
    """An entity as ``queries.END`` takes it."""
    return {"uuid": entity.uuid, "name": entity.name, "summary": entity.summary,
            "vector": vectors[entity.uuid]}


def _kept(row: dict[str, Any], episode: str, expired_at: datetime | None) -> KeptFact:
    """A fact with its ends, from a row of ``queries.FACT_COLUMNS``."""
    return KeptFact(
        uuid=row["uuid"], episode=episode, group_id=row["group_id"], name=row["name"],
        fact=row["fact"] or "", created_at=time_of(row["created_at"]),
        valid_at=time_of(row["valid_at"]),
        invalid_at=time_of(row["invalid_at"]) if row["invalid_at"] else None,
        expired_at=expired_at, source=_end(row, "a"), target=_end(row, "b"))


def _end(row: dict[str, Any], side: str) -> Entity:
    return Entity(row[side], row[f"{side}_label"] or "Entity", row[f"{side}_name"])
