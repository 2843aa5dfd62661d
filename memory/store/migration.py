"""``dualmem migrate``: replay a home's file memory into its graph, or import Auto-Claude memory.

The replay opens the two layers itself rather than through the dual store, so that the report
says what this run did (a dual store in this process would replay in the background too). Only
the process that can open the graph read-write can replay into it; a dry run needs no graph.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends.errors import BackendUnavailable, MigrationError
from backends.graph.history import HistoryReport, KeptFact, compare
from backends.graph.protocol import Graph
from fallback import FileBackend
from memory.store.config import Config
from memory.store.graphs import open_graph, stream
from memory.store.project import planned_project_id, project_id
from memory.store.selection import open_backend
from migrate import (
    ImportReport,
    Ledger,
    MigrationReport,
    Migrator,
    Progress,
    dry_run,
    import_specs,
    prune,
)

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
) -> MigrateResult:
    """Replay ``config.home``'s file memory into its graph and verify, then write ``history``
    (another graph's retired facts, on a move) beside the episodes and verify it too. Raises
    ``MigrationError`` when the graph is held elsewhere or a verification fails, and, for
    ``prune_files``, unless the home uses the graph alone (``--backend graph``)."""
    if prune_files and config.backend != "graph":
        raise MigrationError(PRUNE_REFUSED)
    files = await FileBackend.open(config.files_dir, max_body_bytes=config.max_body_bytes)
    ledger = (Ledger.open_for_reading if preview else Ledger.open)(config.ledger_file)
    try:
        if preview:  # a dry run reads the files and the ledger only: no graph needed
            return MigrateResult(await dry_run(files, ledger, stream(config)))
        graph = await _open_graph(config)
        try:
            report = await Migrator(files, graph, ledger, stream=stream(config)).run(
                progress=progress)
            if not report.ok:
                refusal = "not pruning: " if prune_files else ""
                raise MigrationError(f"{refusal}{report.summary()}")
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


async def carry_history(graph: Graph, facts: Sequence[KeptFact]) -> HistoryReport:
    """Write ``facts`` (retired, of the graph a home moves from) on ``graph``, where the
    journal's replay has written their episodes, and compare what it then holds with them.
    Idempotent: a fact its episode knows already is not written again."""
    written = await graph.keep_history(facts)
    episodes = {fact.episode for fact in facts}
    held = [key for key in episodes if await graph.get(key) is not None]
    return compare(facts, held, await graph.retired_facts(), written)


@dataclass(frozen=True)
class Departure:
    note: str
    """what was done with the journal"""
    history: list[KeptFact] | None
    """the graph's retired facts, None when it is held elsewhere (they stay there)"""


async def take_in_graph(config: Config) -> Departure:
    """Before the home's memory moves to another graph: bring memories only its graph holds
    (written with ``--backend graph``) into the journal, which the move replays, and read the
    history the journal lacks (retired facts). A graph another process holds is left to it
    (its holder keeps the journal whole), its history with it."""
    from memory.store.dual import open_dual

    store = await open_dual(config)
    try:
        if not store.holds_graph:
            return Departure(f"the journal moves as it is, the graph's history stays "
                             f"({store.reason})", None)
        await store.catch_up()
        return Departure("the journal took in the graph's memories first",
                         await store.retired_facts())
    finally:
        await store.aclose()


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
    ``migrate.insights``). Damaged files are skipped and reported (``strict``: the first one
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
