"""Writing system knowledge and project overviews into a store, idempotently.

Each item is compared with what the store holds before anything is written, so re-seeding
rewrites nothing unchanged; a changed default is updated in place (same id). An item someone
stored by other means (its ``source`` is not seeding) is knowledge of its own and is kept:
stored knowledge outranks the built-in defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from backends.model import Episode, now, stable_id
from backends.protocol import MemoryBackend
from backends.safe_files import MiB, read_regular
from seeds.groups import (
    PROJECT_OVERVIEW,
    PROJECT_SEED_SOURCE,
    SEED_GROUP,
    SEED_SOURCE,
    SEED_VERSION,
)

if TYPE_CHECKING:  # pydantic and yaml: not for `dualmem init`, which seeds the overview alone
    from seeds.knowledge import SystemKnowledge

Outcome = Literal["created", "updated", "unchanged", "kept"]
OVERVIEW_FILES = ("README.md", "CLAUDE.md")
MAX_OVERVIEW_CHARS = 64_000  # an overview is context for an agent, not an archive
OVERVIEW_FILE_LIMIT = 16 * MiB
"""the most of README.md or CLAUDE.md that is read (its first MAX_OVERVIEW_CHARS are kept)"""


@dataclass
class SeedReport:
    """What a seeding run did, by the natural key of each item."""

    version: str | None = None
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    @property
    def written(self) -> int:
        return len(self.created) + len(self.updated)

    def add(self, key: str, outcome: Outcome) -> None:
        getattr(self, outcome).append(key)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "kept": self.kept,
        }


def _same_content(a: Episode, b: Episode) -> bool:
    return (a.group_id, a.kind, a.name, a.body) == (b.group_id, b.kind, b.name, b.body)


async def put_if_changed(
    store: MemoryBackend, episode: Episode, *, keep_foreign: bool = False
) -> tuple[Outcome, Episode]:
    """Write ``episode`` unless the store already holds the same content under its id; returns
    what happened and the episode as stored. An update keeps the memory's first time
    (``created_at``); ``valid_at`` says when this content took effect. With ``keep_foreign``, a
    version written by another source is left alone."""
    existing = await store.get(episode.id)
    if existing is None:
        await store.upsert(episode)
        return "created", episode
    if keep_foreign and existing.source != episode.source:
        return "kept", existing
    if _same_content(existing, episode):
        return "unchanged", existing
    updated = episode.model_copy(update={"created_at": existing.created_at, "valid_at": now()})
    await store.upsert(updated)
    return "updated", updated


async def _seed(store: MemoryBackend, episode: Episode) -> Outcome:
    return (await put_if_changed(store, episode, keep_foreign=True))[0]


async def seed_system_knowledge(
    store: MemoryBackend, knowledge: SystemKnowledge | None = None
) -> SeedReport:
    """Seed role constraints, quality-gate profiles and implementation modes (default: the
    built-in ones), and record the seed version. Idempotent."""
    from seeds.knowledge import builtin_knowledge

    knowledge = knowledge or builtin_knowledge()
    report = SeedReport(version=knowledge.version())
    for item in knowledge.items():
        episode = item.to_episode(SEED_SOURCE)
        report.add(item.key, await _seed(store, episode))
    marker = Episode.create(
        group_id=SEED_GROUP, kind=SEED_VERSION, name=f"System knowledge {report.version}",
        body={"version": report.version, "keys": sorted(item.key for item in knowledge.items())},
        key="system", source=SEED_SOURCE,
    )
    report.add("seed-version", await _seed(store, marker))
    return report


async def seeded_version(store: MemoryBackend) -> str | None:
    """The version of the defaults last seeded into ``store``, or None if never seeded."""
    marker = await store.get(stable_id(SEED_GROUP, SEED_VERSION, "system"))
    data = marker.data if marker is not None else None
    return data.get("version") if isinstance(data, dict) else None


def read_overview(project_dir: Path) -> str | None:
    """The project's README.md and CLAUDE.md as one Markdown text, or None when it has neither.
    ``FileRefused`` for one that is no regular file, or a link that leads out of the project
    (a repository's README.md linked to ``/etc/shadow`` would become a memory served to agents)."""
    parts = []
    for name in OVERVIEW_FILES:
        path = project_dir / name
        if path.is_file():
            raw = read_regular(path, limit=OVERVIEW_FILE_LIMIT, within=project_dir)
            text = raw.decode("utf-8", errors="replace").replace("\x00", "").strip()
            parts.append(f"<!-- {name} -->\n{text}")
    if not parts:
        return None
    text = "\n\n".join(parts)
    if len(text) > MAX_OVERVIEW_CHARS:
        text = text[:MAX_OVERVIEW_CHARS] + "\n\n[truncated]"
    return text


async def seed_project_overview(
    store: MemoryBackend, group_id: str, project_dir: Path
) -> SeedReport:
    """Store the project's README.md / CLAUDE.md as one ``project_overview`` episode in the
    project's group. Idempotent; reports nothing when the project has neither file."""
    report = SeedReport()
    text = read_overview(project_dir)
    if text is not None:
        episode = Episode.create(
            group_id=group_id, kind=PROJECT_OVERVIEW, name=f"Project overview: {project_dir.name}",
            body=text, key="overview", source=PROJECT_SEED_SOURCE,
        )
        report.add("overview", await _seed(store, episode))
    return report
