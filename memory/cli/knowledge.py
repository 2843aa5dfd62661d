"""``gaps``: what the project's memory lacks, by 000's categories; ``interview``: ask the
questions that fill them, in the terminal, and store the answers (``memory.agent.gaps``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memory.agent.gaps import InteractiveCaptureSession, KnowledgeCategory, analyze_gaps
from memory.cli.base import Command, UsageError, opened
from memory.output import Output
from memory.store.config import Config
from memory.store.project import project_id

CATEGORIES = [c.value for c in KnowledgeCategory]


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--focus", choices=CATEGORIES, metavar="CATEGORY",
                        help="one category only: %(choices)s")
    parser.add_argument("--max", type=int, default=10, metavar="N",
                        help="at most N questions (default 10)")


async def gaps(args: argparse.Namespace, config: Config) -> Output:
    async with opened(config, create=False, one_shot=True) as (backend, _):
        found = await analyze_gaps(backend, project_id(config.home), args.focus, args.max)
    lines = [f"[{gap.importance}] {gap.category.value}: {gap.question}" for gap in found]
    return Output({"gaps": [{"category": g.category.value, "question": g.question,
                             "importance": g.importance, "context": g.context,
                             "example_answer": g.example_answer} for g in found]},
                  "\n".join(lines) or "no gaps: memory holds something of every category")


def _terminal(event: str, data: Any = None) -> str | None:
    """Asks on stderr and reads stdin, so ``--json`` keeps stdout one document."""
    if event == "question":
        print(f"\n[{data['number']}/{data['total']}] {data['category']}: {data['question']}\n"
              f"  ({data['context']})", file=sys.stderr)
    elif event == "get_input":
        print("> ", end="", file=sys.stderr, flush=True)
        line = sys.stdin.readline()
        return line.rstrip("\n")
    elif event in ("intro", "summary"):
        print(data, file=sys.stderr)
    return None


async def interview(args: argparse.Namespace, config: Config) -> Output:
    if args.max < 1:
        raise UsageError("--max must be at least 1")
    async with opened(config, create=True) as (backend, _):
        session = InteractiveCaptureSession(backend, project_id(config.home))
        captured = await session.run_session(args.focus, args.max, _terminal)
    return Output({"captured": [record.model_dump(mode="json") for record in captured]},
                  f"stored {len(captured)} answer(s)")


COMMANDS = {
    "gaps": Command(_arguments, gaps),
    "interview": Command(_arguments, interview),
}
