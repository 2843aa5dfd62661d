"""Importing Auto-Claude memory: every spec found at or below a folder
(``auto_claude_specs``), each replayed into the target by the migrator under a ledger
stream of its own (so a re-import writes nothing, however the folder was named), reported per
spec and kind. A finished import is recorded in the ledger under ``AUTO_CLAUDE``, where
``dualmem status`` finds it.

An import is ``clean`` when every file was read and every memory stored, and ``partial`` when
some files were skipped (each named with its reason, see ``auto_claude``) or read with
bytes that are not UTF-8 replaced (``mended``), or some memories refused by the store (as in any
migration); everything else is imported either way.
Every folder is read before anything is written, so ``strict`` stops at the first damaged file
with nothing written.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Collection
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from backends.errors import MigrationError
from backends.insights import Scope
from backends.model import Episode
from backends.protocol import MemoryBackend
from memory.importers.auto_claude import AutoClaudeFolder, MendedFile, SkippedFile, shown
from memory.importers.auto_claude_specs import SpecFolder, find_specs
from migrate.ledger import Ledger
from migrate.migrator import MigrationReport, Migrator, Progress, Skipped, dry_run, make_plan

AUTO_CLAUDE = "auto-claude"
"""the ledger stream of whole imports (each spec's own stream is ``AutoClaudeFolder.stream``)"""
CLEAN, PARTIAL = "clean", "partial"


@dataclass(frozen=True)
class SpecImport:
    spec: str
    folder: Path
    report: MigrationReport
    """the spec's replay; its ``skipped`` are memories the store refused"""
    skipped_files: tuple[SkippedFile, ...]
    mended_files: tuple[MendedFile, ...] = ()

    @property
    def verified(self) -> bool:
        """The store holds every memory but those it refused (a dry run verifies nothing)."""
        verification = self.report.verification
        if verification is None or verification.clean:
            return True
        refused = Counter(skip.group_id for skip in self.report.skipped)
        return all(
            check.ok or (check.changed == 0 and check.missing == refused[check.group_id])
            for check in verification.groups
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "folder": shown(self.folder),
            "skipped_files": [s.to_json() for s in self.skipped_files],
            "mended_files": [m.to_json() for m in self.mended_files],
            **self.report.to_json(),
        }

    def summary(self) -> str:
        report = self.report
        verb = "would write" if report.dry_run else "wrote"
        kinds = ", ".join(f"{n} {kind}" for kind, n in report.written_by_kind.items())
        line = f"{self.spec}: {verb} {report.written} of {report.scanned}"
        line += f" ({kinds})" if kinds else ""
        if self.skipped_files:
            line += f", {len(self.skipped_files)} file(s) skipped"
        if self.mended_files:
            line += f", {len(self.mended_files)} file(s) with bytes not UTF-8 replaced"
        if report.skipped:
            line += f", {len(report.skipped)} refused by the store"
        verification = report.verification
        if verification is None:
            return line
        checked = "verified the rest" if self.verified and not verification.clean else (
            verification.summary())
        return f"{line}; {checked}"


@dataclass(frozen=True)
class ImportReport:
    path: Path
    dry_run: bool
    started_at: datetime
    seconds: float
    specs: tuple[SpecImport, ...]

    @property
    def skipped_files(self) -> list[SkippedFile]:
        return [skipped for spec in self.specs for skipped in spec.skipped_files]

    @property
    def mended_files(self) -> list[MendedFile]:
        return [mended for spec in self.specs for mended in spec.mended_files]

    @property
    def refused(self) -> list[Skipped]:
        return [skipped for spec in self.specs for skipped in spec.report.skipped]

    @property
    def partial(self) -> bool:
        """Some file was skipped or mended, or some memory refused by the store."""
        return bool(self.skipped_files or self.mended_files or self.refused)

    @property
    def status(self) -> str:
        return PARTIAL if self.partial else CLEAN

    @property
    def verified(self) -> bool:
        return all(spec.verified for spec in self.specs)

    @property
    def scanned(self) -> int:
        return sum(spec.report.scanned for spec in self.specs)

    @property
    def written(self) -> int:
        return sum(spec.report.written for spec in self.specs)

    @property
    def unchanged(self) -> int:
        return sum(spec.report.unchanged for spec in self.specs)

    def written_by_kind(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for spec in self.specs:
            counts.update(spec.report.written_by_kind)
        return dict(sorted(counts.items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "stream": AUTO_CLAUDE,
            "path": shown(self.path),
            "dry_run": self.dry_run,
            "status": self.status,
            "verified": self.verified,
            "ok": self.verified and not self.partial,
            "started_at": self.started_at.isoformat(),
            "seconds": round(self.seconds, 3),
            "scanned": self.scanned,
            "written": self.written,
            "unchanged": self.unchanged,
            "written_by_kind": self.written_by_kind(),
            "skipped_files": [s.to_json() for s in self.skipped_files],
            "mended_files": [m.to_json() for m in self.mended_files],
            "refused": [asdict(s) for s in self.refused],
            "specs": [spec.to_json() for spec in self.specs],
        }

    def summary(self) -> str:
        verb = "would write" if self.dry_run else "wrote"
        lines = [
            f"{self.status}: {len(self.specs)} spec(s) from {shown(self.path)}: {verb} "
            f"{self.written} of {self.scanned} memories ({self.unchanged} unchanged), "
            f"{len(self.skipped_files)} file(s) skipped, in {self.seconds:.2f} s"
        ]
        lines += [f"  {spec.summary()}" for spec in self.specs]
        lines += [f"  skipped {shown(s.path)}: {s.reason}" for s in self.skipped_files]
        lines += [f"  mended {shown(m.path)}: {m.reason}" for m in self.mended_files]
        lines += [f"  refused {s.describe()}" for s in self.refused]
        return "\n".join(lines)


async def import_specs(
    path: Path,
    group_id: str,
    target: MemoryBackend | None,
    ledger: Ledger,
    *,
    specs: Collection[str] = (),
    strict: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import every spec at or below ``path`` (only those named in ``specs``, when given) into
    ``target`` under ``group_id``, each verified after; with ``target`` None, a dry run that
    reads the folders and the ledger only. Raises ``MigrationError`` when no spec is found, a
    named spec is not there, or (``strict``) a file is damaged; a failed verification is in the
    report (``verified``), not raised."""
    clock = time.perf_counter()
    started = datetime.now(UTC)
    chosen = _chosen(find_specs(path), specs, path)
    folders = [  # nothing is read from outside the folder named: a link may lead anywhere
        AutoClaudeFolder(spec.memory, Scope(group_id, spec.name), strict=strict,
                         within=path)
        for spec in chosen
    ]
    for folder in folders:
        folder.episodes()
    if target is None:
        reports = [await dry_run(folder, ledger, folder.stream) for folder in folders]
    else:
        reports = await _replay(folders, target, ledger, progress)
    result = ImportReport(
        path, target is None, started, time.perf_counter() - clock,
        tuple(
            SpecImport(spec.name, folder.root, report, tuple(folder.skipped),
                       tuple(folder.mended))
            for spec, folder, report in zip(chosen, folders, reports, strict=True)
        ),
    )
    if target is not None:
        ledger.record_run(AUTO_CLAUDE, result.to_json())
    return result


async def _replay(
    folders: list[AutoClaudeFolder], target: MemoryBackend, ledger: Ledger,
    progress: Progress | None,
) -> list[MigrationReport]:
    """Each folder replayed in turn, with one progress count over all of them."""
    hashes: list[dict[str, tuple[Episode, str]]] = [{} for _ in folders]
    plans = [
        await make_plan(folder, ledger, folder.stream, cache)
        for folder, cache in zip(folders, hashes, strict=True)
    ]
    total = sum(len(plan.writes) for plan in plans)
    reports: list[MigrationReport] = []
    for folder, cache in zip(folders, hashes, strict=True):
        done = sum(report.written for report in reports)

        def step(count: int, _: int, done: int = done) -> None:
            if progress is not None:
                progress(done + count, total)

        migrator = Migrator(folder, target, ledger, stream=folder.stream, hashes=cache)
        reports.append(await migrator.run(progress=step))
    return reports


def _chosen(found: list[SpecFolder], names: Collection[str], path: Path) -> list[SpecFolder]:
    if not names:
        return found
    missing = sorted(set(names) - {spec.name for spec in found})
    if missing:
        there = ", ".join(spec.name for spec in found)
        raise MigrationError(f"no spec {', '.join(missing)} under {path} (found: {there})")
    return [spec for spec in found if spec.name in names]
