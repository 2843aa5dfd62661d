"""The ``dualmem`` command line: one thin layer over the async API (parse, call, print).

A command is one async function registered with ``@command(name, help, arguments)`` that returns
an ``Output``: the JSON document printed with ``--json``, and the text printed otherwise. Errors
are our own (``DualmemError``) and nothing else is caught: one line on stderr, plus
``{"error": {"type", "message"}}`` on stdout with ``--json``; exit 1, or 2 for a wrong command line.
A command that did its work only in part says so with an exit status of its own: 3 for an
Auto-Claude import that skipped damaged files or refused memories (``PARTIAL_EXIT``), its report
printed as usual.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import orjson
from pydantic import ValidationError

from backends.errors import BackendUnavailable, DualmemError, InvalidEpisode, WriteFailed
from backends.graph import GraphBackend
from backends.model import Episode, check_group_id, ensure_body_fits
from backends.protocol import MemoryBackend, upsert_all
from memory import demo
from memory.agent import AgentMemory, session_from_json, session_line
from memory.config import BACKEND_CHOICES, Config
from memory.context import Phase, Task, build_context
from memory.dual import DualBackend, ledger_path
from memory.knowledge import project_overrides
from memory.markdown import export_markdown
from memory.migration import import_auto_claude, migrate_home
from memory.progress import Progress
from memory.project import ensure_project_id, project_id
from memory.records import json_object
from memory.seeding import seed_home
from memory.selection import Selection, open_backend
from memory.status import collect_status
from memory.turns import TurnState, feature_turns, record_turn

IMPORT_BATCH = 500
PARTIAL_EXIT = 3


class UsageError(DualmemError):
    """The command line itself is wrong (exit status 2)."""


class NotFound(DualmemError):
    """No episode has the id asked for."""


class FileArgumentError(DualmemError):
    """A file named on the command line cannot be read or written."""


@dataclass(frozen=True)
class Output:
    data: dict[str, Any]
    """The one JSON document printed with ``--json``."""
    text: str
    """What a person reads otherwise (nothing when empty)."""
    exit_code: int = 0
    """0, or ``PARTIAL_EXIT`` when the work was done only in part"""


Handler = Callable[[argparse.Namespace, Config], Awaitable[Output]]


@dataclass(frozen=True)
class Command:
    help: str
    arguments: Callable[[argparse.ArgumentParser], object]
    run: Handler


COMMANDS: dict[str, Command] = {}


def command(
    name: str, help: str, arguments: Callable[[argparse.ArgumentParser], object] = lambda _: None
) -> Callable[[Handler], Handler]:
    def register(run: Handler) -> Handler:
        COMMANDS[name] = Command(help, arguments, run)
        return run

    return register


@asynccontextmanager
async def _opened(config: Config) -> AsyncIterator[tuple[MemoryBackend, Selection]]:
    backend, selection = await open_backend(config)
    try:
        yield backend, selection
    finally:
        await backend.aclose()


def _filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--group", dest="groups", action="append", metavar="G",
                        help="only this group (repeatable)")
    parser.add_argument("--kind", metavar="K", help="only this kind")


def _filter_values(args: argparse.Namespace) -> dict[str, Any]:
    groups = [check_group_id(group) for group in args.groups] if args.groups else None
    return {"group_ids": groups, "kinds": [args.kind] if args.kind else None}


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise FileArgumentError(f"cannot read {path}: {exc.strerror or exc}") from None


def _utf8(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidEpisode(f"{where} is not valid UTF-8 (bad byte at {exc.start})") from None


def _summary(episode: Episode) -> str:
    return f"{episode.id}  {episode.group_id}/{episode.kind}  {episode.name}"


# --- commands ---------------------------------------------------------------------------------


@command("init", "create the memory home and the project's stable id")
async def cmd_init(args: argparse.Namespace, config: Config) -> Output:
    # The id is named after the folder that holds the home (the project, for ./.dualmem).
    project_id, created = ensure_project_id(config.project_file, config.home.parent.name)
    async with _opened(config) as (_, selection):
        pass
    return Output(
        {"home": str(config.home), "project_id": project_id, "created": created,
         "layer": selection.layer, "reason": selection.reason},
        f"{'initialised' if created else 'already initialised'}: {config.home}\n"
        f"project id: {project_id}\nlayer: {selection.layer} ({selection.reason})",
    )


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--group", required=True, metavar="G")
    parser.add_argument("--kind", required=True, metavar="K")
    parser.add_argument("--name", required=True, metavar="N", help="a one-line title")
    body = parser.add_mutually_exclusive_group(required=True)
    body.add_argument("--body", metavar="TEXT")
    body.add_argument("--body-file", type=Path, metavar="F", help="UTF-8 text or JSON")
    parser.add_argument("--key", help="a natural key: adding the same key again updates")
    parser.add_argument("--source", default="cli", help="who wrote it (default: cli)")


@command("add", "store one memory", _add_arguments)
async def cmd_add(args: argparse.Namespace, config: Config) -> Output:
    body = args.body
    if body is None:
        body = _utf8(_read_file(args.body_file), f"body file {args.body_file}")
    episode = Episode.create(group_id=args.group, kind=args.kind, name=args.name, body=body,
                             key=args.key, source=args.source)
    async with _opened(config) as (backend, _):
        receipt = await backend.upsert(episode)
    pending = " (the journal; the graph's holder indexes it)" if receipt.pending else ""
    return Output(
        receipt.model_dump(mode="json"),
        f"stored {receipt.id} in the {receipt.layer} layer{pending}\n  {receipt.location}",
    )


def _parse_jsonl(raw: bytes, path: Path, max_body_bytes: int) -> list[Episode]:
    """Every episode of the file, or an error naming the first bad line (nothing is stored)."""
    episodes = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        fields = json_object(line, where)
        try:
            episode = Episode.parse(**fields)
            ensure_body_fits(episode, max_body_bytes)
        except InvalidEpisode as exc:
            raise InvalidEpisode(f"{where}: {exc}") from None
        episodes.append(episode)
    return episodes


@command("import", "store every episode of a JSON Lines file (as written by export)",
         lambda parser: parser.add_argument("file", type=Path, metavar="FILE.jsonl"))
async def cmd_import(args: argparse.Namespace, config: Config) -> Output:
    episodes = _parse_jsonl(_read_file(args.file), args.file, config.max_body_bytes)
    stored = 0
    async with _opened(config) as (backend, selection):
        with Progress("import", len(episodes)) as bar:
            try:
                for start in range(0, len(episodes), IMPORT_BATCH):
                    batch = episodes[start : start + IMPORT_BATCH]
                    await upsert_all(backend, batch)
                    stored += len(batch)
                    bar.advance(len(batch))
            except DualmemError as exc:
                raise WriteFailed(
                    f"only the first {stored} of {len(episodes)} episodes of {args.file} are "
                    f"stored: {exc}"
                ) from exc
    return Output(
        {"file": str(args.file), "imported": stored, "layer": selection.layer},
        f"imported {stored} episode(s) from {args.file} into the {selection.layer} layer",
    )


def _export_arguments(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("file", type=Path, nargs="?", metavar="FILE.jsonl")
    target.add_argument("--markdown", type=Path, metavar="DIR",
                        help="instead: patterns, gotchas, codebase map and sessions as Markdown")


@command("export", "write every episode to a JSON Lines file, one per line (or --markdown DIR)",
         _export_arguments)
async def cmd_export(args: argparse.Namespace, config: Config) -> Output:
    if args.markdown is not None:
        async with _opened(config) as (backend, _):
            try:
                files = await export_markdown(backend, args.markdown)
            except OSError as exc:
                raise FileArgumentError(f"cannot write {args.markdown}: {exc}") from None
        return Output({"folder": str(args.markdown), "files": files},
                      f"wrote {len(files)} Markdown file(s) to {args.markdown}")
    written = 0
    async with _opened(config) as (backend, _):
        total = await backend.count()
        try:
            with args.file.open("wb") as out, Progress("export", total) as bar:
                async for episode in backend.scan():
                    out.write(orjson.dumps(episode.model_dump(mode="json", exclude_none=True)))
                    out.write(b"\n")
                    written += 1
                    bar.advance()
        except OSError as exc:
            raise FileArgumentError(f"cannot write {args.file}: {exc.strerror or exc}") from None
    return Output({"file": str(args.file), "exported": written},
                  f"exported {written} episode(s) to {args.file}")


def _search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query")
    _filters(parser)
    parser.add_argument("--limit", type=int, default=10, metavar="N", help="default 10")


@command("search", "find memories by keywords (typo tolerant)", _search_arguments)
async def cmd_search(args: argparse.Namespace, config: Config) -> Output:
    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    async with _opened(config) as (backend, _):
        hits = await backend.search(args.query, limit=args.limit, **_filter_values(args))
    lines = [f"{hit.score:.2f}  {_summary(hit.episode)}\n      "
             f"{' '.join(hit.episode.body.split())[:100].rstrip()}" for hit in hits]
    return Output(
        {"query": _printable(args.query), "hits": [hit.model_dump(mode="json") for hit in hits]},
        "\n".join(lines) or "no matches",
    )


@command("get", "show one memory", lambda parser: parser.add_argument("id"))
async def cmd_get(args: argparse.Namespace, config: Config) -> Output:
    async with _opened(config) as (backend, _):
        episode = await backend.get(args.id)
    if episode is None:
        raise NotFound(f"no episode with id {args.id}")
    fields = episode.model_dump(mode="json", exclude_none=True)
    body = fields.pop("body")
    header = "\n".join(f"{field + ':':<12}{value}" for field, value in fields.items())
    return Output({"episode": episode.model_dump(mode="json")}, f"{header}\n\n{body}")


@command("list", "list memories, oldest first", _filters)
async def cmd_list(args: argparse.Namespace, config: Config) -> Output:
    async with _opened(config) as (backend, _):
        episodes = [episode async for episode in backend.scan(**_filter_values(args))]
    lines = [f"{e.created_at:%Y-%m-%d %H:%M}  {_summary(e)}" for e in episodes]
    lines.append(f"{len(episodes)} episode(s)")
    return Output(
        {"count": len(episodes), "episodes": [e.model_dump(mode="json") for e in episodes]},
        "\n".join(lines),
    )


@command("delete", "remove one memory", lambda parser: parser.add_argument("id"))
async def cmd_delete(args: argparse.Namespace, config: Config) -> Output:
    async with _opened(config) as (backend, _):
        deleted = await backend.delete(args.id)
    if not deleted:
        raise NotFound(f"no episode with id {args.id}; nothing deleted")
    return Output({"id": args.id, "deleted": True}, f"deleted {args.id}")


@command("status", "the layer in use and why, counts per group, unreadable files")
async def cmd_status(args: argparse.Namespace, config: Config) -> Output:
    async with _opened(config) as (backend, selection):
        status = await collect_status(backend, selection, config.home, ledger_path(config))
        # The dual store (auto) adds what waits for the graph and the last migration.
        dual = await backend.status() if isinstance(backend, DualBackend) else None
    if dual is None:
        return Output(status.to_json(), status.describe())
    return Output(status.to_json() | {"dual": dual.to_json()},
                  f"{status.describe()}\n{dual.describe()}")


@command("repair", "compare the graph with the journal and make it equal again (a damaged "
         "graph is moved aside and rebuilt; memories only the graph holds join the journal)")
async def cmd_repair(args: argparse.Namespace, config: Config) -> Output:
    if config.backend != "auto":
        raise UsageError("repair works on the dual store: use --backend auto")
    async with _opened(config) as (backend, _):
        if not isinstance(backend, DualBackend) or not backend.holds_graph:
            reason = backend.reason if isinstance(backend, DualBackend) else "not the dual store"
            raise BackendUnavailable("graph", reason, "repair needs to hold the graph")
        verdict = await backend.repair()
        left = await backend.differences()
        journal = await backend.count()
    return Output(
        {"repaired": verdict.to_json(), "differences": left.to_json(), "journal": journal},
        f"graph made equal to the journal ({journal} episodes): wrote {verdict.written}, "
        f"deleted {verdict.deleted}, {verdict.joined} graph-only memories joined the journal",
    )


@command("seed", "seed system knowledge and the project overview (idempotent)",
         lambda parser: parser.add_argument(
             "--project-overrides", type=Path, metavar="FILE",
             help="check FILE and install it as <home>/entity-overrides.yaml"))
async def cmd_seed(args: argparse.Namespace, config: Config) -> Output:
    async with _opened(config) as (backend, _):
        report = await seed_home(backend, config.home, overrides_file=args.project_overrides)
    return Output(report.to_json(), report.describe())


def _session_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["save", "history"])
    parser.add_argument("file", type=Path, nargs="?", metavar="FILE.json",
                        help="save: a session insight file (Auto-Claude's session_NNN.json)")
    parser.add_argument("--session", type=int, metavar="N", help="save: the session number")
    parser.add_argument("--spec", metavar="S", help="a spec's memory instead of the project's")
    parser.add_argument("--limit", type=int, default=5, metavar="N", help="history: default 5")


@command("session", "save FILE.json: store a session's insights; history: recent sessions",
         _session_arguments)
async def cmd_session(args: argparse.Namespace, config: Config) -> Output:
    if args.action == "save" and args.file is None:
        raise UsageError("session save needs FILE.json")
    async with _opened(config) as (backend, _):
        memory = AgentMemory(backend, project_id(config.home), args.spec, source="cli")
        if args.action == "history":
            sessions = await memory.get_session_history(args.limit)
            return Output({"sessions": sessions},
                          "\n".join(map(session_line, sessions)) or "no sessions")
        text = _utf8(_read_file(args.file), str(args.file))
        number, insights = session_from_json(text, file_name=args.file.name,
                                             session_num=args.session)
        saved = await memory.save_session_insights(number, insights)
    kinds = Counter(episode.kind for episode in saved)
    return Output({"session": number, "saved": dict(kinds), "ids": [e.id for e in saved]},
                  f"saved session {number}: " + ", ".join(f"{n} {k}" for k, n in kinds.items()))


def _turns_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["record", "list", "latest"])
    parser.add_argument("file", type=Path, nargs="?", metavar="FILE.json",
                        help="record: a turn state as JSON")
    parser.add_argument("--feature", metavar="F", help="list, latest: the feature")
    parser.add_argument("--task", metavar="T", help="list, latest: only this task")


@command("turns", "record FILE.json: store a turn state; list, latest --feature F: show them",
         _turns_arguments)
async def cmd_turns(args: argparse.Namespace, config: Config) -> Output:
    if args.action == "record" and args.file is None:
        raise UsageError("turns record needs FILE.json")
    if args.action != "record" and args.feature is None:
        raise UsageError(f"turns {args.action} needs --feature F")
    project = project_id(config.home)
    async with _opened(config) as (backend, _):
        if args.action == "record":
            text = _utf8(_read_file(args.file), str(args.file))
            state = TurnState.from_json(text, str(args.file))
            receipt = await record_turn(backend, project, state)
            return Output({"turn_id": state.turn_id, "receipt": receipt.model_dump(mode="json")},
                          f"recorded {state.turn_id} in the {receipt.layer} layer")
        turns = await feature_turns(backend, project, args.feature, args.task)
    if args.action == "latest":
        turns = turns[-1:]
    return Output({"turns": [turn.model_dump(mode="json") for turn in turns]},
                  "\n".join(turn.summary() for turn in turns) or "no turns")


def _context_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", required=True, metavar="TEXT", help="what the task is")
    parser.add_argument("--id", default="TASK", metavar="ID", help="the task's id")
    parser.add_argument("--type", default="implementation", metavar="T",
                        help="implementation, review, planning, refine, docs, ... (default: "
                        "implementation)")
    parser.add_argument("--complexity", type=int, default=5, metavar="N", help="1-10 (default 5)")
    parser.add_argument("--phase", choices=[p.value for p in Phase], default="implement")
    parser.add_argument("--feature", metavar="F", help="the feature the task belongs to")
    parser.add_argument("--stack", metavar="S", help="the tech stack, to find its patterns")
    parser.add_argument("--refinement", type=int, default=0, metavar="N",
                        help="the retry this is (0: a first attempt)")
    parser.add_argument("--failure", metavar="TYPE", help="how the last attempt failed")
    parser.add_argument("--autobuild", action="store_true", help="a player-coach run")
    parser.add_argument("--actor", choices=["player", "coach"], help="with --autobuild")
    parser.add_argument("--turn", type=int, metavar="N", help="with --autobuild: the turn")


@command("context", "the memories a task needs, as Markdown within its token budget",
         _context_arguments)
async def cmd_context(args: argparse.Namespace, config: Config) -> Output:
    if not args.autobuild and (args.actor or args.turn is not None):
        raise UsageError("--actor and --turn go with --autobuild")
    try:
        task = Task(
            id=args.id, description=args.task, task_type=args.type, complexity=args.complexity,
            tech_stack=args.stack, feature_id=args.feature, refinement_attempt=args.refinement,
            last_failure_type=args.failure, is_autobuild=args.autobuild,
            current_actor=args.actor or "player", turn_number=args.turn or 0,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UsageError(problems) from None
    overrides = project_overrides(config.home)
    async with _opened(config) as (backend, _):
        result = await build_context(backend, task, project_id=project_id(config.home),
                                     phase=Phase(args.phase), overrides=overrides)
    return Output(result.to_json(), result.markdown
                  or f"nothing in memory is relevant to this task (budget {result.budget} tokens)")


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
                        help="group of the imported memories (default: the project's id)")
    parser.add_argument("--prune", action="store_true",
                        help="then delete the migrated file memory (only after a clean check)")


@command("migrate", "replay file memory into the graph and verify it, or import Auto-Claude "
         "memory (--from-auto-claude)", _migrate_arguments)
async def cmd_migrate(args: argparse.Namespace, config: Config) -> Output:
    if args.prune and (args.dry_run or args.from_auto_claude):
        raise UsageError("--prune goes with a plain migrate only")
    if (args.specs or args.strict) and not args.from_auto_claude:
        raise UsageError("--spec and --strict go with --from-auto-claude")
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
                                    progress=bar.update)
    finally:
        bar.close()
    return Output(result.to_json(), result.summary())


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


@command("reembed", "recompute every vector of the graph with the built-in embedder (after "
         "an embedder change is reported)")
async def cmd_reembed(args: argparse.Namespace, config: Config) -> Output:
    count = await GraphBackend.reembed(config.graph_dir)
    return Output({"reembedded": count, "location": str(config.graph_dir)},
                  f"re-embedded {count} episodes in {config.graph_dir}")


@command("demo", "run the main job end to end in a temporary folder, saying what it does")
async def cmd_demo(args: argparse.Namespace, config: Config) -> Output:
    echo = None if args.json else print
    report = await demo.run_demo(run, backend=args.backend, echo=echo)
    return Output(report, "")


# --- the program ------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see: {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    # --json is accepted before the command and after it; SUPPRESS keeps a subcommand
    # from resetting a global --json to False.
    json_flag = _Parser(add_help=False)
    json_flag.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                           help="print exactly one JSON document")
    parser = _Parser(prog="dualmem", description="A dual-layer memory store for coding agents.")
    parser.add_argument("--home", type=Path, metavar="DIR",
                        help="memory home (default: $DUALMEM_HOME or ./.dualmem)")
    parser.add_argument("--backend", choices=BACKEND_CHOICES,
                        help="layer to use (default: $DUALMEM_BACKEND or auto)")
    parser.add_argument("--json", action="store_true", help="print exactly one JSON document")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, spec in COMMANDS.items():
        spec.arguments(
            commands.add_parser(name, help=spec.help, description=spec.help, parents=[json_flag])
        )
    return parser


async def execute(args: argparse.Namespace) -> Output:
    config = Config.from_env(home=args.home, backend=args.backend)
    return await COMMANDS[args.command].run(args, config)


async def run(argv: Sequence[str]) -> Output:
    """Run one command line in this event loop; raises ``DualmemError`` (the demo drives this)."""
    return await execute(build_parser().parse_args(argv))


def _printable(text: str) -> str:
    """``text`` with any lone surrogate (a byte of the command line that is not UTF-8) shown as
    an escape, so that it can be printed and put in JSON."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _print_error(exc: DualmemError, as_json: bool) -> None:
    message = _printable(" ".join(str(exc).split()) or type(exc).__name__)
    print(f"dualmem: error: {message}", file=sys.stderr)
    if as_json:
        error = {"type": type(exc).__name__, "message": message}
        print(orjson.dumps({"error": error}).decode())


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in argv  # known before parsing, so usage errors honour it too
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # --help, already printed
            return exc.code if isinstance(exc.code, int) else 0
        as_json = args.json
        output = asyncio.run(execute(args))
    except DualmemError as exc:
        _print_error(exc, as_json)
        return 2 if isinstance(exc, UsageError) else 1
    if as_json:
        print(orjson.dumps(output.data).decode())
    elif output.text:
        print(output.text)
    return output.exit_code
