"""What the graph holds and the journal cannot give it again (retired facts, the LLM's
enrichments), saved by the graph's holder beside the journal (``kept_log``) and given back to a
graph made again from the journal."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from backends.errors import WriteFailed
from fallback import FileBackend, kept_log

if TYPE_CHECKING:  # the graph's modules import numpy: a one-shot read never opens the graph
    from backends.graph.history import KeptFact
    from backends.graph.protocol import Graph

log = logging.getLogger(__name__)


class KeptFacts:
    """The kept-facts log of one journal: what it has saved, and which memories were written
    since (whose retired facts the next save reads)."""

    def __init__(self, files: FileBackend) -> None:
        self._files = files
        self._saved: dict[str, KeptFact] | None = None
        """the history file's latest line of each fact it holds, by uuid (read once)"""
        self._unsaved: set[str] | None = None
        """the memories written since the history was saved, whose retired facts it may lack;
        None: any memory's (a previous holder's, graphiti's), so every retired fact is read"""
        self._saved_enriched: dict[str, str] | None = None
        """the enrichments the journal's file holds (episode id -> digest; read once), and
        those of memories of other homes on a shared graph, never saved here"""

    def written(self, episode_ids: Iterable[str]) -> None:
        """These memories were written into the graph: the next save reads their history."""
        if self._unsaved is not None:
            self._unsaved.update(episode_ids)

    def read_everything(self) -> None:
        """Any memory's facts may have been retired (a take-over, a graph made equal): the
        next save reads every retired fact."""
        self._unsaved = None

    async def save(self, graph: Graph) -> None:
        """Append what ``graph`` holds and the journal cannot give it again to the files beside
        the journal, which a rebuilt graph gets it back from. A disk that refuses costs nothing
        yet: the graph keeps it, and the next save tries again."""
        try:
            if await self._save_enrichments(graph):
                self._unsaved = None  # graphiti's extraction may retire any memory's facts
            await self._save_history(graph)
        except WriteFailed as exc:
            log.warning("%s", exc)

    async def _save_history(self, graph: Graph) -> None:
        """The facts the graph retired since: those of the memories written since, or, after
        a take-over or an enrichment, every one not saved yet (a write reads a write's worth
        of history, not all of it); and those saved retired that such a memory states again,
        as stated (``expired_at`` None: the file's latest line for a fact is what it is)."""
        from backends.graph.history import KeptFact, latest

        path = self._files.history_file
        if self._saved is None:
            self._saved = latest(kept_log.read(path, KeptFact.from_json))
        saved, written = self._saved, self._unsaved
        if written is not None and not written:
            return
        found = await graph.retired_facts(written)
        # Of this journal's memories only: a server's graph holds other homes' too.
        fresh = [fact for fact in found if _current(saved.get(fact.uuid))
                 and await self._files.get(fact.episode)]
        # A fact saved retired that its memory, written since, states again: a rewrite back
        # to the content graphiti's extraction had contradicted it at must not retire it again.
        retired = {fact.uuid for fact in found}
        fresh += [replace(fact, expired_at=None) for fact in saved.values()
                  if not _current(fact) and fact.uuid not in retired
                  and (written is None or fact.episode in written)
                  and await self._files.get(fact.episode)]
        kept_log.append(path, fresh)
        saved.update((fact.uuid, fact) for fact in fresh)
        self._unsaved = set()

    async def _save_enrichments(self, graph: Graph) -> bool:
        """What graphiti's LLM extraction found since, of memories at their content now; True
        when it found any (of this home's memories or, on a shared graph, another's)."""
        from backends.graph.history import Enrichment

        path = self._files.enriched_file
        if self._saved_enriched is None:
            self._saved_enriched = {item.episode: item.digest
                                    for item in kept_log.read(path, Enrichment.from_json)}
        saved = self._saved_enriched
        recorded = await graph.enriched()
        due = [key for key, digest in recorded.items() if saved.get(key) != digest]
        if not due:
            return False
        journal = self._files.content_hashes()
        fresh = await graph.enrichments(key for key in due if key in journal)
        kept_log.append(path, fresh)
        # Another home's memory (a shared graph) is not saved, and not looked at again.
        saved.update((key, recorded[key]) for key in due)
        return True

    async def restore(self, graph: Graph) -> None:
        """Give a graph made from the journal the facts rewrites had retired, as they were,
        and what graphiti's extraction had found, without asking the LLM (what it already
        holds, or of memories gone or rewritten since, is left)."""
        from backends.graph.history import Enrichment, KeptFact, latest

        kept = latest(kept_log.read(self._files.history_file, KeptFact.from_json))
        facts = [fact for fact in kept.values() if not _current(fact)]
        if facts and (written := await graph.keep_history(facts)):
            log.info("restored %d retired facts from %s", written, self._files.history_file)
        # The file's last line for a memory is its latest enrichment.
        found = {item.episode: item for item in kept_log.read(self._files.enriched_file,
                                                              Enrichment.from_json)}
        if found and (written := await graph.keep_enrichments(list(found.values()))):
            log.info("restored the LLM's enrichment of %d memories from %s", written,
                     self._files.enriched_file)


def _current(line: KeptFact | None) -> bool:
    """Whether the history file's latest line for a fact leaves it current: there is none, or
    it says the fact was stated again."""
    return line is None or line.expired_at is None
