"""The agent's commands: ``session`` (save, history), ``turns`` (record, list, latest),
``context`` and ``critical``."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from backends.model import check_group_id, problems
from memory.agent.knowledge import project_overrides
from memory.agent.memories import AgentMemory, session_from_json
from memory.agent.sessions import session_line
from memory.agent.turns import TurnState, feature_turns, record_turn
from memory.cli.base import JSON_FILE_LIMIT, Command, UsageError, opened, read_file, utf8
from memory.context import (
    TASK_TYPES,
    CachedStore,
    Phase,
    Task,
    build_context,
    load_critical_context,
)
from memory.context.quality import quality_metrics
from memory.output import Output
from memory.store.config import Config
from memory.store.project import project_folder, project_id
from memory.workset import project_path, working_set

if TYPE_CHECKING:
    from memory.context.areas import AreaGuess


def _session_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["save", "history"],
                        help="save: store FILE.json; history: show recent sessions")
    parser.add_argument("file", type=Path, nargs="?", metavar="FILE.json",
                        help="save: a session insight file (Auto-Claude's session_NNN.json)")
    parser.add_argument("--session", type=int, metavar="N", help="save: the session number")
    parser.add_argument("--spec", metavar="S", help="a spec's memories: saved as that spec's "
                        "(in the project's group), the history of that spec only")
    parser.add_argument("--limit", type=int, default=5, metavar="N", help="history: default 5")


async def session(args: argparse.Namespace, config: Config) -> Output:
    if args.action == "history":
        async with opened(config, create=False, one_shot=True) as (backend, _):
            memory = AgentMemory(backend, project_id(config.home), args.spec, source="cli")
            sessions = await memory.get_session_history(args.limit)
        return Output({"sessions": sessions},
                      "\n".join(map(session_line, sessions)) or "no sessions")
    if args.file is None:
        raise UsageError("session save needs FILE.json")
    text = utf8(read_file(args.file, limit=JSON_FILE_LIMIT), str(args.file))
    number, insights = session_from_json(text, file_name=args.file.name, session_num=args.session)
    async with opened(config, create=True) as (backend, _):
        memory = AgentMemory(backend, project_id(config.home), args.spec, source="cli")
        saved = await memory.save_session_insights(number, insights)
    kinds = Counter(episode.kind for episode in saved)
    return Output({"session": number, "saved": dict(kinds), "ids": [e.id for e in saved]},
                  f"saved session {number}: " + ", ".join(f"{n} {k}" for k, n in kinds.items()))


def _turns_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["record", "list", "latest"],
                        help="record: store FILE.json; list, latest: show a feature's turns")
    parser.add_argument("file", type=Path, nargs="?", metavar="FILE.json",
                        help="record: a turn state as JSON")
    parser.add_argument("--feature", metavar="F", help="list, latest: the feature")
    parser.add_argument("--task", metavar="T", help="list, latest: only this task")


async def turns(args: argparse.Namespace, config: Config) -> Output:
    if args.action == "record":
        if args.file is None:
            raise UsageError("turns record needs FILE.json")
        text = utf8(read_file(args.file, limit=JSON_FILE_LIMIT), str(args.file))
        state = TurnState.from_json(text, str(args.file))
        async with opened(config, create=True) as (backend, _):
            receipt = await record_turn(backend, project_id(config.home), state)
        return Output({"turn_id": state.turn_id, "receipt": receipt.model_dump(mode="json")},
                      f"recorded {state.turn_id} in the {receipt.layer} layer")
    if args.feature is None:
        raise UsageError(f"turns {args.action} needs --feature F")
    async with opened(config, create=False, one_shot=True) as (backend, _):
        found = await feature_turns(backend, project_id(config.home), args.feature, args.task)
    if args.action == "latest":
        found = found[-1:]
    return Output({"turns": [turn.model_dump(mode="json") for turn in found]},
                  "\n".join(turn.summary() for turn in found) or "no turns")


def _context_arguments(parser: argparse.ArgumentParser) -> None:
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("description", nargs="?", metavar="TASK", help="what the task is")
    given.add_argument("--task", metavar="TEXT", help="the same, as an option")
    parser.add_argument("--id", default="TASK", metavar="ID", help="the task's id")
    parser.add_argument("--type", default="implementation", choices=TASK_TYPES, metavar="T",
                        help="the kind of task, one of: %(choices)s (default: %(default)s)")
    parser.add_argument("--complexity", type=int, default=5, metavar="N", help="1-10 (default 5)")
    parser.add_argument("--phase", choices=[p.value for p in Phase], default="implement",
                        help="the phase of work: %(choices)s (default: %(default)s)")
    parser.add_argument("--feature", metavar="F", help="the feature the task belongs to")
    parser.add_argument("--stack", metavar="S", help="the tech stack, to find its patterns")
    parser.add_argument("--refinement", type=int, default=0, metavar="N",
                        help="the retry this is (0: a first attempt)")
    parser.add_argument("--failure", metavar="TYPE", help="how the last attempt failed")
    parser.add_argument("--autobuild", action="store_true", help="a player-coach run")
    parser.add_argument("--actor", choices=["player", "coach"],
                        help="with --autobuild: who works this turn, %(choices)s")
    parser.add_argument("--turn", type=int, metavar="N", help="with --autobuild: the turn")
    parser.add_argument("--group", dest="groups", action="append", default=[], metavar="G",
                        help="also read this group (repeatable); the project's are always read")
    parser.add_argument("--spec", metavar="S", help="the spec the task belongs to")
    parser.add_argument("--isolate", action="store_true",
                        help="with --spec: leave other specs' memories out (GroupIdMode.SPEC)")
    parser.add_argument("--file", dest="files", action="append", default=[], metavar="PATH",
                        help="a file the task works on (repeatable): what memory says of it, "
                        "its neighbours and its area's conventions join the context")
    parser.add_argument("--infer-areas", action="store_true",
                        help="the configured LLM names the areas the task touches: their "
                        "conventions join the context (bounded cost, see the README)")


async def context(args: argparse.Namespace, config: Config) -> Output:
    if not args.autobuild and (args.actor or args.turn is not None):
        raise UsageError("--actor and --turn go with --autobuild")
    if args.isolate and not args.spec:
        raise UsageError("--isolate goes with --spec S")
    description = args.task if args.description is None else args.description
    root = Path(project_folder(config.home, Path.cwd()))
    files = working_set(root, given=[project_path(f, root) for f in args.files],
                        prompt=description or "", git=False)
    try:
        task = Task(
            id=args.id, description=description, files=tuple(files),
            task_type=args.type, complexity=args.complexity,
            tech_stack=args.stack, feature_id=args.feature, refinement_attempt=args.refinement,
            last_failure_type=args.failure, is_autobuild=args.autobuild,
            current_actor=args.actor or "player", turn_number=args.turn or 0,
            spec=args.spec, isolation="spec" if args.isolate else "project",
        )
    except ValidationError as exc:
        raise UsageError(problems(exc)) from None
    extra = [check_group_id(group) for group in args.groups]
    guess = _area_guess(config) if args.infer_areas else None
    async with opened(config, create=False, one_shot=True) as (backend, _):
        result = await build_context(
            CachedStore(backend), task, project_id=project_id(config.home),
            phase=Phase(args.phase), overrides=project_overrides(config.home), extra_groups=extra,
            guess_areas=guess,
        )
    return Output(result.to_json() | {"quality": quality_metrics(result)}, result.markdown
                  or f"nothing in memory is relevant to this task (budget {result.budget} tokens)")


def _area_guess(config: Config) -> AreaGuess:
    from memory.store.area_guess import area_guesser

    guess = area_guesser(config)
    if guess is None:
        raise UsageError("--infer-areas needs an LLM: dualmem config set llm [NAME:]MODEL[@URL]")
    return guess


def _critical_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", default="", metavar="TEXT",
                        help="what the task is: failures and decisions relevant to it come first")
    parser.add_argument("--type", default="feature", choices=TASK_TYPES, metavar="T",
                        help="the kind of task, for its quality gates: %(choices)s "
                        "(default: %(default)s)")
    parser.add_argument("--complexity", type=int, default=5, metavar="N", help="1-10 (default 5)")
    parser.add_argument("--role", choices=["player", "coach"], default="player",
                        help="whose constraints: %(choices)s (default: %(default)s)")
    parser.add_argument("--feature", metavar="F", help="feature work: the feature's overview too")


async def critical(args: argparse.Namespace, config: Config) -> Output:
    async with opened(config, create=False, one_shot=True) as (backend, _):
        found = await load_critical_context(
            backend, project_id(config.home), task=args.task, task_type=args.type,
            complexity=args.complexity, role=args.role, feature_id=args.feature,
            overrides=project_overrides(config.home),
        )
    return Output(found.to_json(), found.markdown())


COMMANDS = {
    "session": Command(_session_arguments, session),
    "turns": Command(_turns_arguments, turns),
    "context": Command(_context_arguments, context),
    "critical": Command(_critical_arguments, critical),
}
