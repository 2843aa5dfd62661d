"""Commands about the home as a whole: ``init``, ``status``, ``seed``, ``migrate``, ``repair``,
``reembed``, ``enrich``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from backends.errors import BackendUnavailable
from backends.model import check_group_id
from backends.protocol import Enriches, MemoryBackend
from memory.agent.scopes import turn_states_group
from memory.cli.base import (
    IMPORT_FILE_LIMIT,
    Command,
    UsageError,
    chosen_groups,
    group_options,
    no_arguments,
    opened,
    read_file,
)
from memory.cli.progress import Progress
from memory.output import PARTIAL_EXIT, Output
from memory.store.config import Config
from memory.store.home import require_home
from memory.store.layers import Layered
from memory.store.project import (
    Place,
    committed,
    ensure_project_id,
    read_project,
    read_project_id,
    record_place,
    relocation,
    renew_project_id,
)
from memory.store.selection import Selection
from memory.store.settings import write_gitignore
from memory.store.status import collect_status

if TYPE_CHECKING:
    from backends.graph.history import KeptFact

# The other commands' modules (seeding, the migrator, the graph: numpy, pydantic, yaml) are
# imported where they run: ``status`` would pay for them all, and a test suite runs it often.


def _init_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--new-id", action="store_true",
                        help="give the home a new project id: for a home copied from another "
                        "project (the old id's memories stay in its group)")


async def init(args: argparse.Namespace, config: Config) -> Output:
    # The id is named after the folder that holds the home (the project, for ./.dualmem).
    name = config.home.parent.name
    notice, previous = None, None
    if args.new_id:
        previous, project_id = renew_project_id(config.project_file, name)
        created = True
    else:
        project_id, created = ensure_project_id(config.project_file, name)
        notice = _moved_or_copied(config, record=True)
    write_gitignore(config.home)
    from memory.agent.seeding import seed_overview

    async with opened(config, create=True) as (store, selection):
        overview = await seed_overview(store, config.home)  # 000: init seeds the overview
    lines = [f"{'initialised' if created else 'already initialised'}: {config.home}",
             f"project id: {project_id}"]
    if overview.created or overview.updated:
        lines.append("project overview: seeded from README.md / CLAUDE.md")
    if previous is not None:
        lines.append(f"(it was {previous}: that id's memories stay in its group, "
                     f"--group {previous} reads them)")
    if notice is not None:
        lines.append(f"note: {notice}")
    lines.append(f"layer: {selection.layer} ({selection.reason})")
    return Output(
        {"home": str(config.home), "project_id": project_id, "created": created,
         "previous_id": previous, "notice": notice, "layer": selection.layer,
         "reason": selection.reason, "overview": overview.to_json()},
        "\n".join(lines),
    )


def _moved_or_copied(config: Config, *, record: bool) -> str | None:
    """What says the home was moved or copied since its place was recorded, with what to do;
    with ``record``, its place now is recorded (an older file's too)."""
    found = read_project(config.project_file)
    if found is None:
        return None
    moved = relocation(found, Place.of(config.home))
    if (moved is not None or found.place is None) and committed(config.project_file):
        return None  # a clone: the place recorded is the first clone's, the file the team's
    if record and (moved is not None or found.place is None):
        record_place(config.project_file, found)
    if moved is None:
        return None
    copied = ("if this home is a copy of another project's, `dualmem init --new-id` gives it an "
              "id of its own (projects sharing an id share their memories on a shared server)")
    if record:
        return f"{moved}: recorded where it is now; {copied}"
    return f"{moved}: if the project moved, `dualmem init` records where it is now; {copied}"


def _file_layer(args: argparse.Namespace, config: Config) -> bool:
    """``--backend file``: the layer itself is the answer, read once (no watcher, no loop);
    ``auto``'s status opens the dual store, to say what the graph holds and awaits."""
    return config.backend == "file"


async def status(args: argparse.Namespace, config: Config) -> Output:
    async with opened(config, create=False, one_shot=_file_layer(args, config)) as (
            backend, selection):
        return await status_report(backend, selection, config)


async def status_report(backend: MemoryBackend, selection: Selection, config: Config) -> Output:
    """What ``dualmem status`` prints, of a store already open (the memory browser's too)."""
    found = await collect_status(backend, selection, config.home, config.ledger_file)
    # The dual store (auto) adds what waits for the graph and the last migration.
    dual = None
    if isinstance(backend, Layered):
        dual = await backend.status()
        if config.graph_url is not None:
            dual = dual._replace(server=str(config.graph_url), reachable=backend.holds_graph)
    project = read_project_id(config.project_file)
    turns = None
    if project is not None and found.groups.get(turn_states_group(project)):
        from memory.agent.turns import retention_status  # pydantic: only where turns are

        turns = await retention_status(backend, project)
    data, text = found.to_json(), found.describe()
    notice = _moved_or_copied(config, record=False)
    if notice is not None:
        data, text = data | {"project_notice": notice}, f"{text}\nnote: {notice}"
    if dual is not None:
        data, text = data | {"dual": dual.to_json()}, f"{text}\n{dual.describe()}"
    if turns is not None and turns.over:  # running features keep every turn: say so
        data, text = data | {"turn_states": turns.to_json()}, f"{text}\n{turns.describe()}"
    return Output(data, text)


def _seed_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--project-overrides", type=Path, metavar="FILE",
                        help="check FILE and install it as <home>/entity-overrides.yaml")


async def seed(args: argparse.Namespace, config: Config) -> Output:
    from memory.agent.seeding import seed_home

    async with opened(config, create=True) as (backend, _):
        report = await seed_home(backend, config.home, overrides_file=args.project_overrides)
    return Output(report.to_json(), report.describe())


def _migrate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true",
                        help="say what would be written and deleted; change nothing")
    parser.add_argument("--from-auto-claude", type=Path, metavar="PATH",
                        help="import Auto-Claude memory instead: every spec at or below PATH (a "
                        "spec's memory/ folder, a spec, specs/, .auto-claude/ or the project)")
    parser.add_argument("--spec", dest="specs", action="append", metavar="NAME",
                        help="with --from-auto-claude: only this spec (repeatable)")
    parser.add_argument("--strict", action="store_true",
                        help="with --from-auto-claude: a damaged file is an error (nothing is "
                        "written) instead of being skipped (a partial import, exit status 3)")
    parser.add_argument("--group", metavar="G",
                        help="group of the imported memories (default: the project's group)")
    parser.add_argument("--prune", action="store_true",
                        help="then delete the migrated file memory (only after a clean check; "
                        "--backend graph only: in auto the files are the journal)")
    parser.add_argument("--to", metavar="GRAPH",
                        help="move the home's memory to another graph instead: kuzu or ladybug "
                        "(the home's folder for that engine) or a FalkorDB server URL "
                        "(falkor://host:port/graph, redis+unix:///path.sock?graph=NAME); "
                        "resumable, verified, idempotent; then point the home at it")
    # A move to the other embedded engine runs in a process of its own (memory.store.move):
    # the source graph's retired facts reach it in this file.
    parser.add_argument("--history", type=Path, help=argparse.SUPPRESS)
    # ... and its graph is written as a move's (the Migrator), not as the home's own.
    parser.add_argument("--moving", action="store_true", help=argparse.SUPPRESS)


async def migrate(args: argparse.Namespace, config: Config) -> Output:
    if args.prune and (args.dry_run or args.from_auto_claude):
        raise UsageError("--prune goes with a plain migrate only")
    if (args.specs or args.strict) and not args.from_auto_claude:
        raise UsageError("--spec and --strict go with --from-auto-claude")
    if args.to is not None and (args.prune or args.from_auto_claude):
        raise UsageError("--to goes with --dry-run only")
    for given, name in ((args.history is not None, "--history"), (args.moving, "--moving")):
        if given and (args.to is not None or args.from_auto_claude or args.prune):
            raise UsageError(f"{name} goes with a plain migrate only")
    if not args.from_auto_claude:
        require_home(config.home)
    if args.to is not None:
        return await _migrate_to(config, args.to, preview=args.dry_run)
    from memory.store.migration import import_auto_claude, migrate_home

    bar = _LazyProgress("migrate")
    try:
        if args.from_auto_claude:
            group = check_group_id(args.group) if args.group else None
            report = await import_auto_claude(
                config, args.from_auto_claude, group_id=group, specs=args.specs or (),
                strict=args.strict, preview=args.dry_run, progress=bar.update,
            )
            return Output(report.to_json(), report.summary(),
                          PARTIAL_EXIT if report.partial else 0)
        result = await migrate_home(config, preview=args.dry_run, prune_files=args.prune,
                                    progress=bar.update, history=_history(args.history),
                                    moving=args.moving)
    finally:
        bar.close()
    return Output(result.to_json(), result.summary())


async def _migrate_to(config: Config, target: str, *, preview: bool) -> Output:
    from memory.store import graphs
    from memory.store.move import move_home

    destination = graphs.retarget(config, target)
    if graphs.describe(destination) == graphs.describe(config):
        raise UsageError(f"the home's graph is {graphs.describe(config)} already")
    bar = _LazyProgress("migrate")
    try:
        moved = await move_home(config, destination, preview=preview, progress=bar.update)
    finally:
        bar.close()
    return Output(moved.to_json(), moved.describe())


def _history(path: Path | None) -> list[KeptFact] | None:
    if path is None:
        return None
    from backends.graph.history import load_history

    return load_history(read_file(path, limit=IMPORT_FILE_LIMIT))


class _LazyProgress:
    """A progress bar drawn once the total is known (after the migrator has planned)."""

    def __init__(self, label: str) -> None:
        self._label = label
        self._bar: Progress | None = None

    def update(self, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = Progress(self._label, total)
        self._bar.advance(done - self._bar.done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)


def _repair_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--graphiti-indexes", action="store_true",
                        help="also build graphiti's full-text indexes, for graphiti's own "
                        "search over the graph, and keep them from then on")


async def repair(args: argparse.Namespace, config: Config) -> Output:
    if config.backend != "auto":
        raise UsageError("repair works on the dual store: use --backend auto")
    async with opened(config, create=False) as (backend, _):
        if not isinstance(backend, Layered) or not backend.holds_graph:
            reason = backend.reason if isinstance(backend, Layered) else "not the dual store"
            raise BackendUnavailable("graph", reason, "repair needs to hold the graph")
        verdict = await backend.repair(graphiti_indexes=args.graphiti_indexes)
        left = await backend.differences()
        journal = await backend.count()
    return Output(
        {"repaired": verdict.to_json(), "differences": left.to_json(), "journal": journal},
        f"graph made equal to the journal ({journal} episodes): wrote {verdict.written}, "
        f"deleted {verdict.deleted}, {verdict.joined} graph-only memories joined the journal",
    )


async def reembed(args: argparse.Namespace, config: Config) -> Output:
    require_home(config.home)
    from backends.graph import GraphBackend
    from memory.store.providers import embedder_for

    count = await GraphBackend.reembed(config.graph_dir, embedder_for(config),
                                       engine=config.graph_engine)
    return Output({"reembedded": count, "location": str(config.graph_dir)},
                  f"re-embedded {count} episodes in {config.graph_dir}")


def _enrich_arguments(parser: argparse.ArgumentParser) -> None:
    group_options(parser)


async def enrich(args: argparse.Namespace, config: Config) -> Output:
    if config.llm is None:
        raise UsageError("enrich needs an LLM: set DUALMEM_LLM or pass --llm MODEL[@URL]")
    bar = _LazyProgress("enrich")
    try:
        async with opened(config, create=False) as (backend, _):
            if not isinstance(backend, Enriches):
                raise UsageError("enrich works on the graph: use --backend auto or graph")
            from memory.capture.summarise import summarise_sessions
            from memory.store.providers import llm_for

            # Captured sessions first: their summaries are free text the graph then enriches.
            project = read_project_id(config.project_file)
            sessions = await summarise_sessions(backend, project, llm_for(config)) if project \
                else 0
            done = await backend.enrich(group_ids=chosen_groups(args, config.home),
                                        progress=bar.update)
    finally:
        bar.close()
    return Output(
        {"enriched": len(done.enriched), "already": done.skipped, "entities": done.entities,
         "facts": done.facts, "sessions": sessions},
        f"summarised {sessions} captured sessions; enriched {len(done.enriched)} free-text "
        f"memories ({done.skipped} already were): {done.entities} entities and {done.facts} "
        "facts linked",
    )


COMMANDS = {
    "init": Command(_init_arguments, init),
    "status": Command(no_arguments, status, _file_layer),
    "seed": Command(_seed_arguments, seed),
    "migrate": Command(_migrate_arguments, migrate),
    "repair": Command(_repair_arguments, repair),
    "reembed": Command(no_arguments, reembed),
    "enrich": Command(_enrich_arguments, enrich),
}
