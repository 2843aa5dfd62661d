"""``dualmem migrate``: replay a home's file memory into its graph, or import Auto-Claude memory.

On the home's own graph in ``auto`` the replay is the dual store's own (``replayer``): the
command holds the graph as any holder does, and reports what its replay did. Only the process
that can hold the graph can replay into it; a dry run needs no graph. A home used with
``--backend graph`` imports its files with the ``Migrator``, as a move does (``move``).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from backends.errors import BackendUnavailable, MigrationError
from backends.graph.history import HistoryReport, KeptFact, compare
from backends.graph.protocol import Graph
from backends.protocol import Position
from fallback import FileBackend
from memory.importers import ImportReport, import_specs
from memory.store import graphs
from memory.store.config import Config
from memory.store.graphs import open_graph, stream
from memory.store.layers import Verdict
from memory.store.project import planned_project_id, project_id
from memory.store.replayer import preview_replay, record_position
from memory.store.selection import open_backend
from migrate import Ledger, MigrationReport, Migrator, Progress, dry_run, prune
from migrate.migrator import Skipped, make_plan
from migrate.verify import Source

PRUNE_REFUSED = (
    "not pruning: in auto the files are the journal the graph is kept equal to, so pruning "
    "them would delete these memories from the graph too; prune only a home used with "
    "--backend graph")


@dataclass(frozen=True)
class MigrateResult:
    report: MigrationReport
    pruned: int | None = None
    """file episodes deleted after a clean verification (``--prune``), None when not asked"""
    history: HistoryReport | None = None
    """the source graph's retired facts carried by a move (``--to``), None when not asked"""

    def to_json(self) -> dict[str, Any]:
        return self.report.to_json() | {
            "pruned": self.pruned,
            "history": None if self.history is None else self.history.to_json()}

    def summary(self) -> str:
        line = self.report.summary()
        if self.history is not None:
            line += f"; {self.history.summary()}"
        return line if self.pruned is None else f"{line}; pruned {self.pruned} file episodes"


async def migrate_home(
    config: Config,
    *,
    preview: bool = False,
    prune_files: bool = False,
    progress: Progress | None = None,
    history: Sequence[KeptFact] | None = None,
    moving: bool = False,
) -> MigrateResult:
    """``dualmem migrate``: the home's file memory into the graph ``config`` names, verified,
    then ``history`` (another graph's retired facts, on a move) beside it, verified too.
    On the home's own graph in ``auto`` the journal is the truth, and the replay is the one
    every holder of the graph runs (``replay_home``). Otherwise the ``Migrator`` imports the
    files with the ledger: into a graph the home is ``moving`` to (``--to``), or into a home
    used with ``--backend graph``, where ``prune_files`` then deletes them (refused in
    ``auto``: ``PRUNE_REFUSED``). Raises ``MigrationError`` when the graph is held elsewhere or
    a verification fails."""
    if prune_files and config.backend != "graph":
        raise MigrationError(PRUNE_REFUSED)
    if config.backend == "auto" and not moving:
        return await replay_home(config, preview=preview, history=history, progress=progress)
    files = await FileBackend.open(config.files_dir, max_body_bytes=config.max_body_bytes)
    ledger = (Ledger.open_for_reading if preview else Ledger.open)(config.ledger_file)
    try:
        if preview:  # a dry run reads the files and the ledger only: no graph needed
            return MigrateResult(await dry_run(files, ledger, stream(config)))
        graph = await _open_graph(config)
        try:
            position = files.position()  # before the plan: what is written meanwhile waits
            report = await Migrator(files, graph, ledger, stream=stream(config)).run(
                progress=progress)
            if not report.ok:
                refusal = "not pruning: " if prune_files else ""
                raise MigrationError(f"{refusal}{report.summary()}")
            if moving and graph.shared:
                # A server's holders catch up from here, and status counts nothing pending.
                await _moved_up_to(config, graph, position)
            carried = None if history is None else await carry_history(graph, history)
            if carried is not None and not carried.ok:
                raise MigrationError(f"{report.summary()}; {carried.summary()}")
            # prune compares every group by content before it deletes anything.
            pruned = await prune(files, graph, ledger) if prune_files else None
        finally:
            await graph.aclose()
        return MigrateResult(report, pruned, carried)
    finally:
        ledger.close()
        await files.aclose()


async def replay_home(config: Config, *, preview: bool = False,
                      history: Sequence[KeptFact] | None = None,
                      progress: Progress | None = None) -> MigrateResult:
    """Hold the home's graph, bring it up to the journal and verify it with ``differences``
    (``DualBackend.replay``), then write ``history`` (another graph's retired facts, on a
    move) and verify it too. The run is recorded in the ledger (``status`` shows it), and so is
    what the graph now holds, which an import into the same graph plans from. A ``preview``
    says what a holder would write from the position its last holder noted; it needs no graph.
    ``MigrationError`` when the graph is held elsewhere or a verification fails."""
    from memory.store.dual import open_dual

    clock, started = time.perf_counter(), datetime.now(UTC)
    name = stream(config)
    if preview:
        files = await FileBackend.open(config.files_dir, max_body_bytes=config.max_body_bytes,
                                       watch=False)
        try:
            verdict = await preview_replay(files, graphs.index_folder(config) or config.graph_dir)
            journal = await files.count()
        finally:
            await files.aclose()
        report = _replay_report(name, started, journal, verdict, [], dry_run=True)
        report.seconds = time.perf_counter() - clock
        return MigrateResult(report)
    store = await open_dual(config, progress=progress)
    try:
        if not store.holds_graph:
            raise MigrationError(f"cannot migrate: {store.reason}; the process holding the "
                                 "graph replays file memory itself")
        replay = await store.replay()
        refused = [Skipped(key, item.group, item.location, item.why)
                   for key, item in sorted(replay.refused.items())]
        report = _replay_report(name, started, replay.journal, replay.replayed, refused,
                                dry_run=False)
        report.seconds = time.perf_counter() - clock
        ledger = Ledger.open(config.ledger_file)
        try:
            if not replay.left.changed:
                await _note_replayed(store, ledger, name)
            ledger.record_run(name, report.to_json() | {"differences": replay.left.to_json()})
        finally:
            ledger.close()
        if not report.ok or replay.left.changed:
            left = "" if not replay.left.changed else (
                f"; verification FAILED: the graph differs from the journal: {replay.left}")
            raise MigrationError(f"{report.summary()}{left}")
        carried = None
        if history is not None:
            async with store.graph_held() as graph:
                carried = await carry_history(graph, history)
            if not carried.ok:
                raise MigrationError(f"{report.summary()}; {carried.summary()}")
        return MigrateResult(report, None, carried)
    finally:
        await store.aclose()


async def _moved_up_to(config: Config, graph: Graph, position: Position) -> None:
    noted = graphs.index_folder(config) or config.graph_dir
    noted.mkdir(parents=True, exist_ok=True)
    await record_position(graph, noted, position)


def _replay_report(name: str, started: datetime, journal: int, done: Verdict,
                   refused: list[Skipped], *, dry_run: bool) -> MigrationReport:
    return MigrationReport(name, dry_run, started, scanned=journal, written=done.written,
                           unchanged=max(0, journal - done.written - len(refused)),
                           deleted=done.deleted, skipped=refused)


async def _note_replayed(store: Source, ledger: Ledger, name: str) -> None:
    """The graph holds the journal as it is now: the ledger says so, for an import into the
    same graph (``--backend graph``) to plan from."""
    plan = await make_plan(store, ledger, name)
    ledger.record(name, ((e.id, e.group_id, plan.index[e.id][1]) for e in plan.writes))
    ledger.forget(name, ledger.replayed(name).keys() - plan.index.keys())


async def carry_history(graph: Graph, facts: Sequence[KeptFact]) -> HistoryReport:
    """Write ``facts`` (retired, of the graph a home moves from) on ``graph``, where the
    journal's replay has written their episodes, and compare what it then holds with them.
    Idempotent: a fact its episode knows already is not written again."""
    written = await graph.keep_history(facts)
    episodes = {fact.episode for fact in facts}
    held = [key for key in episodes if await graph.get(key) is not None]
    return compare(facts, held, await graph.retired_facts(), written)


async def import_auto_claude(
    config: Config,
    path: Path,
    *,
    group_id: str | None = None,
    specs: Collection[str] = (),
    strict: bool = False,
    preview: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import the Auto-Claude memory of every spec at or below ``path`` (or of ``specs`` only)
    into the home's memory (the graph when this process can hold it, else the file layer,
    pending), in ``group_id`` (default: the project's), each memory tagged with its spec (see
    ``backends.insights``). Damaged files are skipped and reported (``strict``: the first one
    raises). Raises ``MigrationError`` when nothing is found or a verification fails."""
    # A dry run writes nothing: neither the project's id nor the ledger.
    group = group_id or (planned_project_id(config.home) if preview
                         else project_id(config.home))
    ledger = (Ledger.open_for_reading if preview else Ledger.open)(config.ledger_file)
    try:
        if preview:
            return await import_specs(path, group, None, ledger, specs=specs, strict=strict)
        store, _ = await open_backend(config)
        try:
            report = await import_specs(path, group, store, ledger, specs=specs, strict=strict,
                                        progress=progress)
        finally:
            await store.aclose()
    finally:
        ledger.close()
    if not report.verified:
        failed = [spec.summary() for spec in report.specs if not spec.verified]
        raise MigrationError(f"import verification failed: {'; '.join(failed)}")
    return report


async def _open_graph(config: Config) -> Graph:
    try:
        return await open_graph(config)
    except BackendUnavailable as exc:
        detail = f" ({exc.detail})" if exc.detail else ""
        hint = (
            "; the process holding it replays file memory itself"
            if exc.reason == "locked by another process"
            else ""
        )
        raise MigrationError(f"cannot migrate: the graph is {exc.reason}{detail}{hint}") from exc
