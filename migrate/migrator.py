"""Replay one ``MemoryBackend`` into another: same ids, groups, kinds, bodies and times.

A run plans from the source and the ledger alone (content hashes recorded at the last replay),
so a run with nothing new reads no episode of the target (only its counts) and writes nothing.
Deletes reach the
target through the source's tombstones, when the source keeps them (``Tombstones``).
Writes go in batches; each batch is recorded in the ledger once the target has it, so a
killed run resumes at its last whole batch, without a duplicate (upsert replaces by id).
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from backends.errors import DualmemError, InvalidEpisode, MigrationError
from backends.model import Episode
from backends.protocol import Locates, MemoryBackend, Tombstones, upsert_all
from migrate.ledger import Ledger
from migrate.verify import Index, Source, Verification, verify

FILES_TO_GRAPH = "files->graph"
BATCH_SIZE = 500

Progress = Callable[[int, int], None]
"""called with (episodes written so far, episodes to write) after every batch"""


@dataclass
class Plan:
    """What a run would do now."""

    writes: list[Episode]
    deletes: list[str]
    stale_tombstones: list[str]
    """tombstones of ids the source holds again, or pruned on purpose: forgotten, not replayed"""
    pruned: list[str]
    """marks of an interrupted prune: dropped once its tombstones are forgotten"""
    index: Index

    @property
    def scanned(self) -> int:
        return len(self.index)

    def pending_by_group(self) -> dict[str, int]:
        return dict(Counter(e.group_id for e in self.writes))

    def pending_by_kind(self) -> dict[str, int]:
        return dict(sorted(Counter(e.kind for e in self.writes).items()))

    @property
    def empty(self) -> bool:
        return not (self.writes or self.deletes or self.stale_tombstones or self.pruned)


@dataclass(frozen=True)
class Skipped:
    """A source episode the target refused (``InvalidEpisode``: over its size limit, say). It
    stays in the source, pending, and is reported by every run until it is fixed or removed."""

    id: str
    group_id: str
    location: str | None
    """where it lies in the source, when the source can say (a file)"""
    reason: str

    def describe(self) -> str:
        return f"{self.location or self.id}: {self.reason}"


@dataclass
class MigrationReport:
    stream: str
    dry_run: bool
    started_at: datetime
    seconds: float = 0.0
    scanned: int = 0
    written: int = 0
    unchanged: int = 0
    deleted: int = 0
    written_by_group: dict[str, int] = field(default_factory=dict)
    written_by_kind: dict[str, int] = field(default_factory=dict)
    ledger_reset: bool = False
    """the target was empty though the ledger said otherwise (a new database): replayed all"""
    verification: Verification | None = None
    skipped: list[Skipped] = field(default_factory=list)
    """episodes the target refused; the rest were replayed all the same"""

    @property
    def partial(self) -> bool:
        return bool(self.skipped)

    @property
    def ok(self) -> bool:
        return not self.partial and (self.verification is None or self.verification.clean)

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": self.stream,
            "dry_run": self.dry_run,
            "started_at": self.started_at.isoformat(),
            "seconds": round(self.seconds, 3),
            "scanned": self.scanned,
            "written": self.written,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "written_by_group": self.written_by_group,
            "written_by_kind": self.written_by_kind,
            "ledger_reset": self.ledger_reset,
            "ok": self.ok,
            "partial": self.partial,
            "skipped": [asdict(skip) for skip in self.skipped],
            "verification": None if self.verification is None else self.verification.to_json(),
        }

    def summary(self) -> str:
        verb = "would write" if self.dry_run else "wrote"
        line = (
            f"{verb} {self.written} of {self.scanned} episodes ({self.unchanged} unchanged), "
            f"{self.deleted} deletes, in {self.seconds:.2f} s"
        )
        if self.skipped:
            line += (f"; skipped {len(self.skipped)} that cannot be replayed (left pending): "
                     + "; ".join(skip.describe() for skip in self.skipped))
        return line if self.verification is None else f"{line}; {self.verification.summary()}"


class Migrator:
    """Replays ``source`` into ``target`` under ``stream`` in ``ledger``. Keeps content hashes
    of the episodes it has seen, so repeated runs in one process hash only what changed."""

    def __init__(
        self,
        source: Source,
        target: MemoryBackend,
        ledger: Ledger,
        *,
        stream: str = FILES_TO_GRAPH,
        batch_size: int = BATCH_SIZE,
        hashes: dict[str, tuple[Episode, str]] | None = None,
    ) -> None:
        """``hashes``: a content-hash cache to share with other planners of the same source."""
        self.source = source
        self.target = target
        self.ledger = ledger
        self.stream = stream
        self.batch_size = batch_size
        self._hashes = {} if hashes is None else hashes

    async def plan(self) -> Plan:
        return await make_plan(self.source, self.ledger, self.stream, self._hashes)

    async def run(
        self,
        *,
        check: bool = True,
        hash_all: bool = False,
        progress: Progress | None = None,
    ) -> MigrationReport:
        """Replay what changed since the last run. With ``check``, verify the target after:
        every group by count, the groups written to (or all, with ``hash_all``) by content."""
        with _cycle_collection_paused():
            return await self._run(check, hash_all, progress)

    async def _run(self, check: bool, hash_all: bool, progress: Progress | None) -> MigrationReport:
        clock = time.perf_counter()
        started = datetime.now(UTC)
        reset = bool(self.ledger.size(self.stream)) and await self.target.count() == 0
        if reset:
            self.ledger.clear(self.stream)
        plan = await self.plan()
        report = _report(plan, self.stream, started, dry_run=False)
        report.ledger_reset = reset
        try:
            report.skipped = await self._apply(plan, progress)
        except DualmemError as exc:
            raise MigrationError(
                f"replay into the {self.target.layer} layer failed: {exc}"
            ) from exc
        for skip in report.skipped:
            report.written -= 1
            report.written_by_group[skip.group_id] -= 1
        report.written_by_group = {g: n for g, n in report.written_by_group.items() if n}
        if check:
            report.verification = await verify(
                self.source,
                self.target,
                source_index=plan.index,
                hash_groups=None if hash_all else set(report.written_by_group),
            )
        report.seconds = time.perf_counter() - clock
        if check or not plan.empty:
            self.ledger.record_run(self.stream, report.to_json())
        return report

    async def _apply(self, plan: Plan, progress: Progress | None) -> list[Skipped]:
        """Replay the plan; the episodes the target refused, which were not replayed."""
        if plan.deletes:
            for episode_id in plan.deletes:
                await self.target.delete(episode_id)
            self.ledger.forget(self.stream, plan.deletes)
        if isinstance(self.source, Tombstones) and (plan.deletes or plan.stale_tombstones):
            await self.source.forget_tombstones(plan.deletes + plan.stale_tombstones)
        if plan.pruned:
            self.ledger.unmark_pruned(self.stream, plan.pruned)
        total = len(plan.writes)
        skipped: list[Skipped] = []
        for start in range(0, total, self.batch_size):
            batch = plan.writes[start : start + self.batch_size]
            written = await self._write(batch, skipped)
            self.ledger.record(
                self.stream, ((e.id, e.group_id, plan.index[e.id][1]) for e in written)
            )
            if progress is not None:
                progress(start + len(batch), total)
        return skipped

    async def _write(self, batch: list[Episode], skipped: list[Skipped]) -> list[Episode]:
        """Write ``batch``, adding each episode the target refuses to ``skipped``. Returns what
        was written."""
        refused = await upsert_each(self.target, batch)
        for episode, exc in refused:
            where = self.source.location(episode) if isinstance(self.source, Locates) else None
            skipped.append(Skipped(episode.id, episode.group_id, where, str(exc)))
        gone = {episode.id for episode, _ in refused}
        return [episode for episode in batch if episode.id not in gone]


async def upsert_each(target: MemoryBackend, episodes: Sequence[Episode],
                      ) -> list[tuple[Episode, InvalidEpisode]]:
    """Write ``episodes`` into ``target``; when it refuses one (``InvalidEpisode``: a property
    of that episode, not of the target), write the others one by one. Returns the refused ones,
    with why (the replays of ``Migrator`` and of the dual store's holder both write so)."""
    try:
        await upsert_all(target, episodes)
        return []
    except InvalidEpisode:
        pass  # find it, keep the rest
    refused = []
    for episode in episodes:
        try:
            await target.upsert(episode)
        except InvalidEpisode as exc:
            refused.append((episode, exc))
    return refused


async def dry_run(source: Source, ledger: Ledger, stream: str = FILES_TO_GRAPH) -> MigrationReport:
    """What a run would write and delete now; reads the source and the ledger only."""
    clock = time.perf_counter()
    started = datetime.now(UTC)
    report = _report(await make_plan(source, ledger, stream), stream, started, dry_run=True)
    report.seconds = time.perf_counter() - clock
    return report


def _report(plan: Plan, stream: str, started: datetime, *, dry_run: bool) -> MigrationReport:
    return MigrationReport(
        stream,
        dry_run,
        started,
        scanned=plan.scanned,
        written=len(plan.writes),
        unchanged=plan.scanned - len(plan.writes),
        deleted=len(plan.deletes),
        written_by_group=plan.pending_by_group(),
        written_by_kind=plan.pending_by_kind(),
    )


async def make_plan(
    source: Source,
    ledger: Ledger,
    stream: str = FILES_TO_GRAPH,
    hashes: dict[str, tuple[Episode, str]] | None = None,
) -> Plan:
    """What replaying ``source`` would do now, from the source and the ledger alone.
    ``hashes`` (id -> (episode, hash)) is a cache kept across calls, refreshed in place."""
    cache: dict[str, tuple[Episode, str]] = {} if hashes is None else hashes
    replayed = ledger.replayed(stream)
    writes: list[Episode] = []
    index: Index = {}
    seen: dict[str, tuple[Episode, str]] = {}
    with _cycle_collection_paused():
        async for episode in source.scan():
            known = cache.get(episode.id)
            # Layers hand out the same frozen object until it changes: identity saves hashing.
            same = known is not None and known[0] is episode
            digest = known[1] if known is not None and same else episode.content_hash()
            seen[episode.id] = (episode, digest)
            index[episode.id] = (episode.group_id, digest)
            if replayed.get(episode.id) != digest:
                writes.append(episode)
    cache.clear()
    cache.update(seen)
    deletes: list[str] = []
    stale: list[str] = []
    pruned = ledger.pruned(stream)
    if isinstance(source, Tombstones):
        async for tomb in source.tombstones():
            gone = tomb.id not in index and tomb.id not in pruned
            (deletes if gone else stale).append(tomb.id)
    return Plan(writes, deletes, stale, sorted(pruned), index)


async def prune(
    source: MemoryBackend, target: MemoryBackend, ledger: Ledger, *, stream: str = FILES_TO_GRAPH
) -> int:
    """Delete from ``source`` every episode ``target`` holds identically, after a clean
    verification; raise ``MigrationError`` (deleting nothing) otherwise. Returns how many."""
    plan = await make_plan(source, ledger, stream)
    if plan.writes or plan.deletes:
        raise MigrationError("not pruning: the source holds memory not yet migrated")
    result = await verify(source, target, source_index=plan.index)
    if not result.clean:
        raise MigrationError(f"not pruning: {result.summary()}")
    ids = list(plan.index)
    # Marked first: should we die midway, the next run forgets the tombstones our deletes
    # left instead of replaying them.
    ledger.mark_pruned(stream, ids)
    for episode_id, (_, digest) in plan.index.items():
        current = await source.get(episode_id)
        if current is not None and current.content_hash() == digest:
            await source.delete(episode_id)
    if isinstance(source, Tombstones):
        await source.forget_tombstones(ids)
    ledger.unmark_pruned(stream, ids)
    return len(ids)


@contextmanager
def _cycle_collection_paused() -> Iterator[None]:
    """A run allocates hundreds of thousands of short-lived acyclic objects (hashing alone,
    ~10 per episode), enough to trigger full cycle collections over everything the process
    holds: ~0.5 s each with 10k episodes loaded, most of a re-run's budget. Reference counting
    frees those objects; the collector resumes when the run ends."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
