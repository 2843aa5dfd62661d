"""``dualmem seed``: system knowledge, the project's overview, and its overrides file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends.protocol import MemoryBackend
from fallback import disk
from memory.agent.scopes import project_group
from memory.store.project import project_id
from seeds import SeedReport, seed_project_overview, seed_system_knowledge


@dataclass(frozen=True)
class HomeSeedReport:
    project_id: str
    system: SeedReport
    overview: SeedReport
    overrides: Path | None

    def to_json(self) -> dict[str, Any]:
        return {
            "project_id": self.project_id,
            "system": self.system.to_json(),
            "overview": self.overview.to_json(),
            "overrides": str(self.overrides) if self.overrides else None,
        }

    def describe(self) -> str:
        s = self.system
        overview = next(
            (what for what in ("created", "updated", "unchanged", "kept")
             if getattr(self.overview, what)),
            "no README.md or CLAUDE.md to read",
        )
        lines = [
            f"system knowledge {s.version}: {len(s.created)} created, {len(s.updated)} updated, "
            f"{len(s.unchanged)} unchanged" + (f", {len(s.kept)} kept as stored" if s.kept else ""),
            f"project overview: {overview}",
        ]
        if self.overrides:
            lines.append(f"project overrides: {self.overrides}")
        return "\n".join(lines)


async def seed_home(
    store: MemoryBackend, home: Path, *, overrides_file: Path | None = None
) -> HomeSeedReport:
    """Seed the system knowledge, the overview of the project that holds ``home`` (absolute; its
    README.md / CLAUDE.md), and, when given, install ``overrides_file`` as the project's
    ``<home>/entity-overrides.yaml`` after checking that it applies. Idempotent."""
    installed = None if overrides_file is None else _install_overrides(overrides_file, home)
    system = await seed_system_knowledge(store)
    overview = await seed_overview(store, home)
    return HomeSeedReport(project_id(home), system, overview, installed)


async def seed_overview(store: MemoryBackend, home: Path) -> SeedReport:
    """The overview of the project that holds ``home`` (absolute), from its README.md /
    CLAUDE.md (000: seeded when the project is initialised). Idempotent."""
    return await seed_project_overview(store, project_group(project_id(home)), home.parent)


def _install_overrides(overrides_file: Path, home: Path) -> Path:
    # The knowledge's models and the overrides' YAML: not for `dualmem init` (the overview).
    from seeds import OVERRIDES_FILE, builtin_knowledge, load_overrides

    load_overrides(overrides_file).apply(builtin_knowledge())  # fails before anything is written
    installed = home / OVERRIDES_FILE
    if overrides_file.resolve() != installed.resolve():
        home.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed into place: a link planted there is replaced, never
        # written through (a copy would have overwritten whatever it leads to).
        disk.write_atomic(installed, overrides_file.read_bytes())
    return installed
