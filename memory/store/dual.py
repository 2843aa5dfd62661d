"""The dual store (``auto``): the file layer is the complete journal, the graph the primary index.

Every acknowledged write is durable in the files first, whichever process makes it, so every
process reads every memory. Kùzu admits one read-write process per database: the process that
holds the graph brings it up to the journal's position before it answers (its reads are
current) and within about a second of any other process's write (the file layer's watcher wakes
it). The graph records the position it has reached. At take-over it catches up from there; a
graph that is new, of another journal, or whose count disagrees with the journal is made equal
to the journal again; one that cannot be opened because it is damaged is moved aside (never
deleted) and rebuilt. Until the graph has caught up, and in every process that does not hold
it, reads are answered from the files' own index. Non-holders retry the graph, so one takes
over when the holder exits.

A graph written before the journal existed (memories held only in the graph) is brought in at
its first take-over: its memories are written into the journal, except those deleted since.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backends.errors import BackendUnavailable, DualmemError, MigrationError
from backends.graph.protocol import Graph
from backends.model import Episode, Hit, Receipt
from backends.protocol import (
    Enriched,
    Enriches,
    KnownEntity,
    KnownFact,
    Knows,
    Position,
    SetAside,
    upsert_all,
)
from fallback import FileBackend
from memory.store import graphs
from memory.store.config import Config
from memory.store.layers import DualStatus, Verdict
from memory.store.outage import newest_either, read_either, scan_either
from memory.store.providers import embedder_for, llm_for

if TYPE_CHECKING:  # the graph's modules import numpy: a one-shot read never opens the graph
    from backends.graph.embedder import AnyEmbedder
    from backends.graph.history import KeptFact
    from memory.store.holder import GraphOpener, Holder
    from memory.store.replayer import Replay
    from migrate.migrator import Progress


class DualBackend:
    """A ``MemoryBackend`` over the file journal and the graph; open with ``DualBackend.open``.
    It routes: writes to the journal, then to the graph through its ``Holder``; reads to the
    graph when it is current, else to the journal."""

    layer = "dual"

    def __init__(self, files: FileBackend, holder: Holder, ledger_path: Path,
                 graph_dir: Path) -> None:
        self._files = files
        self._holder = holder
        self._ledger_path = ledger_path
        self._graph_dir = graph_dir

    @classmethod
    async def open(cls, files: FileBackend, open_graph: GraphOpener, graph_dir: Path,
                   ledger_path: Path, progress: Progress | None = None) -> DualBackend:
        """Take ``files`` (closed with the store) and try the graph once; in the background,
        bring the graph up to the journal when holding it, or keep retrying it otherwise
        (telling ``progress`` as it goes)."""
        from memory.store.holder import Holder

        holder = Holder(files, open_graph, graph_dir, progress)
        await holder.start()
        return cls(files, holder, ledger_path, graph_dir)

    @property
    def holds_graph(self) -> bool:
        return self._holder.replayer is not None

    @property
    def journal(self) -> FileBackend:
        """The journal every write goes to first (its position moves with each write)."""
        return self._files

    async def retired_facts(self) -> list[KeptFact] | None:
        """The history the graph keeps (``Graph.retired_facts``); None when it is held
        elsewhere."""
        replayer = self._holder.replayer
        return None if replayer is None else await replayer.graph.retired_facts()

    @property
    def layer_in_use(self) -> str:
        """Where reads are answered now: ``graph`` or ``file``."""
        return "file" if self._holder.current is None else "graph"

    @property
    def reason(self) -> str:
        return self._holder.why

    @property
    def problems(self) -> list[tuple[Path, str]]:
        """Files the file layer could not read (shown by ``dualmem status``)."""
        return self._files.problems

    # -- writes: the journal first, then the graph when this process holds it ---------------

    async def upsert(self, episode: Episode) -> Receipt:
        return (await self.upsert_many([episode]))[0]

    async def upsert_many(self, episodes: Sequence[Episode]) -> list[Receipt]:
        """Durable in the journal (else it raises), and in the graph too when this process holds
        it and the graph takes it; the receipts say which (``pending``: not in the graph yet)."""
        receipts = await upsert_all(self._files, episodes)
        indexed = await self._holder.catch_up_now() is not None
        layer = "graph" if indexed else "file"
        return [receipt.model_copy(update={"layer": layer, "pending": not indexed})
                for receipt in receipts]

    async def delete(self, episode_id: str) -> bool:
        existed = await self._files.delete(episode_id)
        if not existed:
            # A graph written before the journal may hold it: its first take-over must not
            # bring it back into the journal.
            await self._files.bury([episode_id])
        await self._holder.catch_up_now()
        return existed

    def set_aside(self) -> list[SetAside]:
        """What people took out of the views (``backends.protocol.Restores``): the journal's."""
        return self._files.set_aside()

    async def restore(self, episode_id: str) -> Episode | None:
        restored = await self._files.restore(episode_id)
        if restored is not None:
            await self._holder.catch_up_now()
        return restored

    # -- reads: the graph when it is current, else the journal's own index ------------------

    async def get(self, episode_id: str) -> Episode | None:
        return await read_either(await self._holder.catch_up_now(read=True), self._files,
                                 lambda store: store.get(episode_id), self._holder.fail)

    async def search(
        self,
        query: str,
        *,
        group_ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
        limit: int = 10,
    ) -> list[Hit]:
        return await read_either(
            await self._holder.catch_up_now(read=True), self._files,
            lambda store: store.search(query, group_ids=group_ids, kinds=kinds, limit=limit),
            self._holder.fail)

    async def scan(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        async for episode in scan_either(await self._holder.catch_up_now(read=True),
                                         self._files, self._holder.fail,
                                         group_ids=group_ids, kinds=kinds):
            yield episode

    async def newest(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> AsyncIterator[Episode]:
        """``ReadsNewest``: ``scan``'s episodes newest first (``newest_either``)."""
        async for episode in newest_either(await self._holder.catch_up_now(read=True),
                                           self._files, self._holder.fail,
                                           group_ids=group_ids, kinds=kinds):
            yield episode

    async def count(
        self, *, group_ids: Sequence[str] | None = None, kinds: Sequence[str] | None = None
    ) -> int:
        return await read_either(await self._holder.catch_up_now(read=True), self._files,
                                 lambda store: store.count(group_ids=group_ids, kinds=kinds),
                                 self._holder.fail)

    async def ids_starting(self, prefix: str, *,
                           group_ids: Sequence[str] | None = None) -> list[str]:
        """``FindsIds``: a range of the graph's index when the graph answers (a team's server
        holds memories the journal does not), else of the journal's."""
        return await read_either(await self._holder.catch_up_now(read=True), self._files,
                                 lambda store: store.ids_starting(prefix, group_ids=group_ids),
                                 self._holder.fail)

    # -- the graph held: status, repair, catching up, enrichment ----------------------------

    async def status(self) -> DualStatus:
        from memory.store.replayer import recorded_position

        position = self._files.position()
        replayer = self._holder.replayer
        skipped = {} if replayer is None else replayer.skipped
        applied = (replayer and replayer.applied) or await self._asked_position(position.epoch) \
            or recorded_position(self._graph_dir)
        if applied is None or applied.epoch != position.epoch:
            pending = await self._files.count()
        else:
            pending = max(0, position.seq - applied.seq) + len(skipped)
        return DualStatus(
            layer=self.layer_in_use,
            reason=self.reason,
            pending=pending,
            skipped=tuple(f"{key} ({refused.group}): {refused.why}"
                          for key, refused in sorted(skipped.items())),
            journal=await self._files.count(),
            last_migration=_last_migration(self._ledger_path),
            unreadable=tuple(f"{path}: {reason}" for path, reason in self.problems),
        )

    async def _asked_position(self, epoch: str) -> Position | None:
        """The position the graph records for this journal (a shared one: another process of
        this home may have brought it further than this one knows), if it answers."""
        replayer = self._holder.replayer
        if replayer is None or not replayer.graph.shared or self._holder.outage.active:
            return None
        with contextlib.suppress(DualmemError):
            return await replayer.graph.applied(epoch)
        return None

    async def repair(self, *, graphiti_indexes: bool = False) -> Verdict:
        """Compare the whole graph with the journal and make it equal (only the holder can),
        and rebuild graphiti's full-text indexes if kept; ``graphiti_indexes`` builds them
        (to be kept from then on) for graphiti's own search. Returns what changed, this
        store's take-over included (it makes the graph equal first, when it must)."""
        async with self._holder.held() as replayer:
            verdict = await replayer.repair(graphiti_indexes=graphiti_indexes)
            self._holder.why = self._holder.holding
            return verdict

    async def differences(self) -> Verdict:
        """How the graph differs from the journal now (all zero when equal); holder only."""
        async with self._holder.held() as replayer:
            return await replayer.differences()

    async def replay(self) -> Replay:
        """Bring the graph up to the journal now; what this store's replay has done since it
        took the graph over, and how the graph differs from the journal (``dualmem migrate``);
        holder only."""
        async with self._holder.held() as replayer:
            return await replayer.report()

    @contextlib.asynccontextmanager
    async def graph_held(self) -> AsyncIterator[Graph]:
        """The graph, up to the journal, for a use of its own (a move's history); holder
        only."""
        async with self._holder.held() as replayer:
            await replayer.bring_up()
            yield replayer.graph

    async def catch_up(self) -> None:
        """Bring the graph up to the journal now (only the holder can)."""
        async with self._holder.held() as replayer:
            taking_over = replayer.applied is None
            await replayer.bring_up()
            if taking_over:
                self._holder.why = self._holder.held_why()

    async def enrich(self, *, group_ids: Sequence[str] | None = None,
                     progress: Callable[[int, int], None] | None = None) -> Enriched:
        """``Enriches.enrich`` on the graph, brought up to the journal first (holder only)."""
        await self.catch_up()
        replayer = self._holder.replayer
        if replayer is None:
            raise BackendUnavailable("graph", self.reason)
        graph = replayer.graph
        if not isinstance(graph, Enriches):
            raise BackendUnavailable("graph", "no enrichment", type(graph).__name__)
        try:
            return await graph.enrich(group_ids=group_ids, progress=progress)
        finally:  # what was done before a failure is kept too
            with contextlib.suppress(BackendUnavailable):  # closed meanwhile
                async with self._holder.held() as held:
                    if held is replayer:
                        await held.save_kept()

    async def knowledge(
        self, group_ids: Sequence[str]
    ) -> tuple[list[KnownEntity], list[KnownFact]]:
        """``backends.protocol.Knows`` of the graph, up to the journal (holder only)."""
        async with self.graph_held() as graph:
            if not isinstance(graph, Knows):
                raise BackendUnavailable("graph", "no knowledge graph", type(graph).__name__)
            return await graph.knowledge(group_ids)

    async def aclose(self) -> None:
        try:
            await self._holder.close()
        finally:
            await self._files.aclose()


async def open_dual(config: Config, *, embedder: AnyEmbedder | None = None,
                    progress: Progress | None = None) -> DualBackend:
    """The dual store of ``config.home``: its file journal, and its graph when this process can
    hold it (its vectors made by ``embedder``, else the configured one; its replay of the
    journal told to ``progress``). The journal is watched
    by the graph's holder (or by everyone while nobody can hold it). A one-shot process opens
    the journal alone instead (``selection.open_backend``)."""
    files = await FileBackend.open(config.files_dir, max_body_bytes=config.max_body_bytes,
                                   watch=False)

    chosen = embedder or embedder_for(config)
    llm = llm_for(config)  # the holder enriches in the background

    async def open_graph() -> Graph:
        return await graphs.open_graph(config, embedder=chosen, llm=llm)

    # The position a server's graph was brought up to is noted beside this home's copy of its
    # index (one per server graph), not beside the embedded graph: status reads it when the
    # server does not answer.
    noted = graphs.index_folder(config) or config.graph_dir
    if config.graph_url is not None:
        with contextlib.suppress(OSError):
            noted.mkdir(parents=True, exist_ok=True)
    try:
        return await DualBackend.open(files, open_graph, noted, config.ledger_file, progress)
    except BaseException:
        await files.aclose()
        raise


def _last_migration(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    from migrate import FILES_TO_GRAPH, Ledger  # status only: the migrator is no read's cost

    try:
        ledger = Ledger.open(path)
    except MigrationError:
        return None
    try:
        return ledger.last_run(FILES_TO_GRAPH)
    finally:
        ledger.close()


