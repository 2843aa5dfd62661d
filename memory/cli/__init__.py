"""The ``dualmem`` command line: one thin layer over the async API (parse, call, print).

Commands live in groups, one module each (``memory/cli/<group>.py``), and a group is imported
only when one of its commands runs, so a hook or a search pays for nothing else. ``COMMANDS``
names every command with its group and help; a group module maps each of its names to a
``Command``: a function adding its arguments, and an async function returning an ``Output``
(the JSON document printed with ``--json``, and the text printed otherwise).

Parsing takes two passes: the first finds the command (any option it does not know yet is left
for later), the second parses the whole line with that command's arguments added. Errors are
our own (``DualmemError``) and nothing else is caught: one line on stderr, plus
``{"error": {"type", "message"}}`` on stdout with ``--json``; exit 1, or 2 for a wrong command
line. A command that did its work only in part exits with ``PARTIAL_EXIT`` (3), its output
printed as usual.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from backends.errors import DualmemError
from backends.graph.engine_names import ENGINES
from memory.cli import driver
from memory.cli.base import Command, UsageError
from memory.output import Output, one_line
from memory.store.config import BACKEND_CHOICES, Config

__all__ = ["COMMANDS", "build_parser", "main", "parse", "run"]

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (group module, help)
    "init": ("home", "create the memory home here and record the project's id"),
    "add": ("memories", "store one memory (in the project's group unless --group)"),
    "import": ("transfer", "store every episode of a JSON Lines file (as written by export)"),
    "export": ("transfer", "write every episode to a JSON Lines file, one per line "
               "(or --markdown DIR)"),
    "search": ("memories", "find memories by keywords, typo tolerant (the project's group "
               "unless --group or --all-groups)"),
    "get": ("memories", "show one memory"),
    "list": ("memories", "list memories, oldest first (the project's group unless --group or "
             "--all-groups)"),
    "delete": ("memories", "remove memories"),
    "edit": ("curation", "correct a memory in $EDITOR (or --body): same id, the earlier "
             "version kept in its history"),
    "forget": ("curation", "forget memories, recoverably (restore, history); --purge: their "
               "text removed from every file dualmem wrote, for good"),
    "restore": ("curation", "bring back a forgotten memory, or a hand bullet taken out of its "
                "view (status lists them)"),
    "history": ("curation", "a memory's earlier versions, retired facts and successor"),
    "entities": ("curation", "the knowledge graph's entities (files, components, decisions, "
                 "...) a query names"),
    "facts": ("curation", "the knowledge graph's facts a query names, with their validity"),
    "dedupe": ("curation", "merge near-duplicate memories (same kind, nearly the same text) "
               "into the oldest, history kept; --dry-run lists them"),
    "config": ("settings", "keep the graph server's URL, the embedder, the LLM or how long damaged "
               "graph copies are kept, in the home for every clone: config set "
               "graph-url|embedder|llm|keep-damaged|infer-areas VALUE; config show"),
    "status": ("home", "the layer in use and why, counts per group, unreadable files, hand "
               "bullets taken out of their views"),
    "seed": ("home", "seed system knowledge and the project overview (idempotent)"),
    "session": ("agent", "save FILE.json: store a session's insights; history: recent sessions"),
    "turns": ("agent", "record FILE.json: store a turn state; list, latest --feature F: show "
              "them"),
    "context": ("agent", "the memories a task needs, as Markdown within its token budget"),
    "critical": ("agent", "what a session must know first: role, quality gates, decisions in "
                 "force, known failures, the feature's overview"),
    "gaps": ("knowledge", "what the project's memory lacks, by category, with the questions "
             "that fill it"),
    "interview": ("knowledge", "ask those questions here and store the answers"),
    "migrate": ("home", "replay file memory into the graph and verify it, or import "
                "Auto-Claude memory (--from-auto-claude)"),
    "repair": ("home", "make the graph equal to the journal again (a damaged graph is moved "
               "aside and rebuilt; memories only the graph holds join the journal)"),
    "reembed": ("home", "recompute every vector of the graph with the configured embedder "
                "(after an embedder change is reported)"),
    "enrich": ("home", "add graphiti's LLM extraction (--llm) to free-text memories not yet "
               "enriched; resumable"),
    "capture": ("capture", "keep what past Claude Code sessions did and learned, from their "
                "transcripts (default: this project's, in ~/.claude/projects/); idempotent"),
    "ui": ("ui", "the memory browser: a page on 127.0.0.1 to search, read, correct and forget "
                 "memories (its URL, with this launch's token, is printed on start)"),
    "mcp": ("serve", "serve this memory to an agent over MCP (stdio) until stdin closes"),
    "hook": ("hook", "Claude Code hooks: read the hook's JSON on stdin, print the hook's "
             "JSON; never fail the session"),
    "demo": ("demo", "run the main job end to end in a temporary folder, saying what it does"),
}


def _command(name: str) -> Command:
    """The command ``name``, importing its group."""
    group = importlib.import_module(f"memory.cli.{COMMANDS[name][0]}")
    commands: dict[str, Command] = group.COMMANDS
    return commands[name]


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` finds it, without importing shutil
    (with bz2 and lzma: ~6 ms), which argparse's own formatter does for every argument added."""
    if os.environ.get("COLUMNS", "").isdigit() and int(os.environ["COLUMNS"]) > 0:
        return int(os.environ["COLUMNS"])
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):  # no stdout, or not a terminal
        return 80


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


class _Version(argparse.Action):
    """``--version``: looked up only when asked (reading the installed metadata costs ~3 ms)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        from memory.about import version

        print(f"dualmem {version()}")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{"formatter_class": _Formatter, **kwargs})

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see: {self.prog} --help)")


def build_parser(name: str | None = None) -> argparse.ArgumentParser:
    """The command line of command ``name`` with its arguments, or, without a name, every
    command without theirs: enough to find which command a line asks for, and to print the
    list of commands."""
    # --json is accepted before the command and after it; SUPPRESS keeps a subcommand
    # from resetting a global --json to False.
    json_flag = _Parser(add_help=False)
    json_flag.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                           help="print exactly one JSON document")
    parser = _Parser(prog="dualmem", description="A dual-layer memory store for coding agents.")
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    parser.add_argument("--home", type=Path, metavar="DIR",
                        help="memory home (default: $DUALMEM_HOME, else the nearest .dualmem/ "
                        "in this folder or its parents, else ./.dualmem)")
    parser.add_argument("--backend", choices=BACKEND_CHOICES,
                        help="layer to use: %(choices)s (default: $DUALMEM_BACKEND or auto)")
    graph = parser.add_mutually_exclusive_group()
    graph.add_argument("--graph-url", metavar="URL",
                       help="the graph on a FalkorDB server, shared by every process: "
                       "falkor://host:port/graph or redis+unix:///path.sock?graph=NAME "
                       "(default: $DUALMEM_GRAPH_URL, else embedded in the home)")
    graph.add_argument("--graph-engine", choices=ENGINES,
                       help="the home's embedded graph engine: %(choices)s (default: "
                       "$DUALMEM_GRAPH_ENGINE or kuzu)")
    parser.add_argument("--embedder", metavar="MODEL[@URL]",
                        help="graphiti's embedder at an OpenAI-compatible endpoint (e.g. "
                        "nomic-embed-text@http://localhost:11434/v1) makes the graph's vectors "
                        "(default: $DUALMEM_EMBEDDER, else the built-in offline one)")
    parser.add_argument("--llm", metavar="MODEL[@URL]",
                        help="graphiti's LLM extraction at an OpenAI-compatible endpoint adds "
                        "entities and facts to free-text memories, in the background and on "
                        "`enrich` (default: $DUALMEM_LLM, else none)")
    parser.add_argument("--json", action="store_true", help="print exactly one JSON document")
    parser.add_argument("--verbose", action="store_true",
                        help="log what the layers do on stderr, the graph server's failed "
                        "queries included (their Cypher and parameters)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if name is not None:
        # A known command's line needs no other command's parser (each costs ~0.5 ms, most
        # of it argparse looking up translations of its headings).
        sub = commands.add_parser(name, help=COMMANDS[name][1], description=COMMANDS[name][1],
                                  parents=[json_flag])
        _command(name).arguments(sub)
        return parser
    for each, (_, help_text) in COMMANDS.items():
        # No --help here: on the first pass, "COMMAND --help" must reach the second, where the
        # command's arguments are there to be listed.
        commands.add_parser(each, help=help_text, description=help_text, parents=[json_flag],
                            add_help=False)
    return parser


def _command_in(argv: Sequence[str]) -> str:
    # Every command's parser costs a short command ~10 ms of CPU: the global options alone
    # find the command of a usual line; any other (--help, a typo) goes to the whole parser.
    quick = _Parser(add_help=False)
    for option in ("--home", "--backend", "--graph-url", "--graph-engine", "--embedder", "--llm"):
        quick.add_argument(option)
    quick.add_argument("--json", action="store_true")
    quick.add_argument("--verbose", action="store_true")
    quick.add_argument("command", nargs="?")
    quick.add_argument("rest", nargs=argparse.REMAINDER)
    try:
        seen, _ = quick.parse_known_args(argv)
    except UsageError:
        seen = None
    if seen is not None and seen.command in COMMANDS:
        return str(seen.command)
    found, _ = build_parser().parse_known_args(argv)
    name: str = found.command
    return name


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` parsed; ``UsageError`` when it is not a valid command line."""
    return build_parser(_command_in(argv)).parse_args(argv)


def _config(args: argparse.Namespace) -> Config:
    return Config.from_env(home=args.home, backend=args.backend, embedder=args.embedder,
                           llm=args.llm, graph_url=args.graph_url, graph_engine=args.graph_engine)


async def execute(args: argparse.Namespace) -> Output:
    return await _command(args.command).run(args, _config(args))


async def run(argv: Sequence[str]) -> Output:
    """Run one command line in this event loop; raises ``DualmemError`` (the demo drives this)."""
    return await execute(parse(argv))


def _log_everything() -> None:
    import logging

    from backends.graph.falkor.server import QUERY_LOG

    logging.basicConfig(level=logging.INFO, format="dualmem: %(name)s: %(message)s")
    logging.getLogger(QUERY_LOG).setLevel(logging.DEBUG)


def _print_error(exc: DualmemError, as_json: bool) -> None:
    message = one_line(exc)
    print(f"dualmem: error: {message}", file=sys.stderr)
    if as_json:
        import orjson  # only --json prints it: a one-shot read need not load it

        error = {"type": type(exc).__name__, "message": message}
        print(orjson.dumps({"error": error}).decode())


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in argv  # known before parsing, so usage errors honour it too
    name = None
    try:
        try:
            name = _command_in(argv)
            args = build_parser(name).parse_args(argv)
        except SystemExit as exc:  # --help, already printed
            return exc.code if isinstance(exc.code, int) else 0
        as_json = args.json
        if args.verbose:
            _log_everything()
        command, config = _command(name), _config(args)
        output = driver.run(command.run(args, config), loopless=command.loopless(args, config))
    except DualmemError as exc:
        if name == "hook":
            # Claude Code reads exit status 2 as "block the prompt" (or "do not stop"): a
            # hook's wrong command line must not hold the session up.
            print(f"dualmem hook: {one_line(exc)}", file=sys.stderr)
            print("{}")
            return 0
        _print_error(exc, as_json)
        return 2 if isinstance(exc, UsageError) else 1
    if as_json:
        import orjson

        print(orjson.dumps(output.data).decode())
    elif output.text:
        print(output.text)
    return output.exit_code
