"""This process's view of a FalkorDB server's graph: the search index and links, kept current
with every process's writes through the change feed. Every write stamps
``(:DualmemChange {uuid, seq})`` from a counter it advances in the same query, so ``sync`` (one
indexed query) learns what the others changed since ``seen``.

A graph emptied under us (the server restarted without its data, or the graph dropped) is
noticed by that same query: the graph's instance, recorded at first use, is gone. ``sync``
raises ``GraphEmptied`` once, having prepared the graph again. Given a ``LocalCopy``, the index
is kept in a folder between opens, valid for one instance up to a change counter."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from backends.errors import BackendUnavailable, GraphEmptied, ProviderFailed
from backends.graph import shared
from backends.graph.embedder import AnyEmbedder, Vectors, embed
from backends.graph.falkor import queries
from backends.graph.falkor.connection import Connection
from backends.graph.falkor.local_copy import LocalCopy, Note
from backends.graph.falkor.rows import episode_of, time_of
from backends.graph.index import Entry, EpisodeIndex
from backends.graph.links import GraphLinks
from backends.graph.shared import LAYER
from backends.graph.stored import decode
from backends.model import Episode
from backends.search.ranking import search_text

log = logging.getLogger(__name__)


class Mirror:
    """The index and links of one connection's graph, and how far they follow its changes."""

    def __init__(self, connection: Connection, embedder: AnyEmbedder,
                 copy: LocalCopy | None) -> None:
        self._connection = connection
        self.embedder = embedder
        # Every process keeps its own: kept in a folder (``copy``) or in memory.
        self._copy = copy
        self.index = copy.index if copy is not None else EpisodeIndex.open(
            None, embedder.dimension, embedder.name)
        self._token = ""
        """the index's token (``EpisodeIndex.rebuilt``), recorded with a kept copy"""
        self.links = GraphLinks()
        self.instance: str | None = None
        """the server graph's instance this process knows; another one means it was emptied"""
        self._seen = 0
        """the change counter up to which the index and links hold every process's writes"""
        self._sync_lock = asyncio.Lock()

    async def prepare(self) -> None:
        """The graph's indexes, change counter, instance and embedder (made on first use)."""
        run = self._connection.run
        for query in queries.INDEXES:
            await run(query)
        await run(queries.COUNTER)
        self.instance = (await run(queries.INSTANCE, value=uuid.uuid4().hex))[0]["value"]
        await self._check_embedder()

    async def sync(self) -> None:
        """Take in what every process changed since ``seen``: the episodes, their links.
        ``GraphEmptied`` when the graph lost what it held (it is prepared again, empty)."""
        async with self._sync_lock:
            rows = await self._connection.run(queries.CHANGES, since=self._seen)
            if rows[0]["instance"] != self.instance:
                await self._renew()
                raise GraphEmptied(str(self._connection.address), "its instance is gone (the "
                                   "server restarted without its data, or the graph was dropped)")
            changes = [row for row in rows if row["uuid"] is not None]
            if not changes:
                return
            keys = list(dict.fromkeys(row["uuid"] for row in changes))
            found = await self._connection.fetch(keys)
            for key in keys:
                self.forget(key)
            fresh = [found[key] for key in keys if key in found]
            vectors = await self._embed_stored(fresh)
            self.remember(zip(fresh, vectors, strict=True))
            await self._load_links({key: episode.group_id for key, episode in found.items()})
            self._seen = max(self._seen, *(int(row["seq"]) for row in changes))

    def took(self, batches: Sequence[tuple[Sequence[shared.Prepared],
                                           Sequence[Mapping[str, Any]], datetime]]) -> None:
        """This process's writes (``write_batch``'s episodes, rows and time, in order) into
        the index and links, at once: indexed a batch at a time, a fill spent most of its time
        in the index. When no other change came before a batch's stamp, ``sync`` need not
        read it back (a fill read back and indexed again every batch it wrote)."""
        self.remember((episode, vector) for written, _, _ in batches
                      for episode, vector, _, _ in written)
        for written, rows, at in batches:
            retired = {row["uuid"]: row["retired"] for row in rows}
            for episode, _, structure, _ in written:
                self.links.put(episode, structure, retired.get(episode.id, []), at)
            seq = int(rows[0]["seq"]) if rows else None
            if seq == self._seen + 1:
                self._seen = seq

    async def _renew(self) -> None:
        """Start again on a graph that was emptied: prepared anew, nothing indexed."""
        await self.prepare()
        await self._connection.driver.build_indices_and_constraints()
        self._token = self.index.rebuilt([])
        self.links = GraphLinks()
        self._seen = 0

    async def load(self) -> None:
        """The index and links: a kept copy brought up to date, or built from every row."""
        run = self._connection.run
        counter = int((await run(queries.CHANGES_NOW))[0]["seq"])
        # read first: what changes while loading is seen
        note = None if self._copy is None or self.instance is None else self._copy.usable(
            self.instance, counter)
        if note is not None:
            self._token, self._seen = note.token, note.seen
            groups = {}
            for key, group, kind in self.index.places():
                self.links.add_place(key, group, kind)
                groups[key] = group
            await self._load_links(groups, every=True)
            await self.sync()
            return
        self._seen = counter
        found = await run(queries.EVERY_EPISODE)
        episodes = [episode_of(row) for row in found]
        stored = [decode(row["vector"], self.embedder.dimension) for row in found]
        missing = iter(await self._embed_stored(
            [e for e, v in zip(episodes, stored, strict=True) if v is None]))
        vectors = [next(missing) if vector is None else vector for vector in stored]
        for episode in episodes:
            self.links.add_place(episode.id, episode.group_id, episode.kind)
        self._token = self.index.rebuilt([Entry(episode, search_text(episode), vector)
                                          for episode, vector in zip(episodes, vectors,
                                                                     strict=True)])
        await self._load_links({episode.id: episode.group_id for episode in episodes},
                               every=True)

    async def _load_links(self, groups: dict[str, str], *, every: bool = False) -> None:
        """The mentions and facts of the episodes of ``groups`` (id -> group); ``every``: they
        are all the graph's episodes (no filter needed)."""
        if not groups:
            return
        params: dict[str, Any] = {} if every else {"keys": list(groups)}
        run = self._connection.run
        mentions = await run(queries.MENTIONS if every else queries.MENTIONS_OF_KEYS, **params)
        facts = await run(queries.FACTS if every else queries.FACTS_OF, **params)
        shared.add_links(
            self.links, groups,
            [(r["episode"], r["entity"], r["label"], r["name"]) for r in mentions],
            [(r["fact"], r["source"], r["target"], r["episode"], time_of(r["valid_at"]),
              time_of(r["invalid_at"]) if r["invalid_at"] else None) for r in facts])

    async def _embed_stored(self, episodes: Sequence[Episode]) -> list[Vectors]:
        """Vectors for episodes read from the server (a remote embedder that is down leaves
        them to the words: zero vectors)."""
        if not episodes:
            return []
        try:
            return list(await embed(self.embedder, [search_text(e) for e in episodes]))
        except ProviderFailed as exc:
            log.warning("indexing without vectors: %s", exc)
            return [np.zeros(self.embedder.dimension, dtype=np.float32) for _ in episodes]

    async def _check_embedder(self) -> None:
        """The graph's vectors are of the embedder its first opener recorded (a read, once it
        is recorded)."""
        run = self._connection.run
        want = {"embedder": self.embedder.name, "dimension": str(self.embedder.dimension)}
        have = {row["key"]: row["value"] for row in await run(queries.META, keys=list(want))}
        if len(have) < len(want):
            have = {row["key"]: row["value"] for row in await run(
                queries.CLAIM_META, writing=True,
                entries=[{"key": key, "value": value} for key, value in want.items()])}
        if have != want:
            raise BackendUnavailable(
                LAYER, "embedder mismatch",
                f"the server's graph holds {have.get('embedder')}/{have.get('dimension')} "
                f"vectors, this process embeds with {want['embedder']}/{want['dimension']}")

    def remember(self, written: Iterable[tuple[Episode, Vectors]]) -> None:
        entries = []
        for episode, vector in written:
            self.links.add_place(episode.id, episode.group_id, episode.kind)
            entries.append(Entry(episode, search_text(episode), vector))
        self.index.put(entries)

    def forget(self, key: str) -> None:
        self.index.drop(key)
        self.links.drop(key)

    def close(self) -> None:
        """Close the index, kept in its folder (with how far it follows) when there is one."""
        if self._copy is None:
            self.index.close()
        else:
            self._copy.close(None if self.instance is None else Note(
                self.instance, self._seen, self._token, len(self.index)))
