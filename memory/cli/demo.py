"""``dualmem demo``: the main job end to end in a temporary folder (see ``memory.demo``)."""

from __future__ import annotations

import argparse

from memory import demo as steps
from memory.cli import run
from memory.cli.base import Command, no_arguments
from memory.output import Output
from memory.store.config import Config


async def demo(args: argparse.Namespace, config: Config) -> Output:
    echo = None if args.json else print
    report = await steps.run_demo(run, backend=args.backend, echo=echo)
    return Output(report, "")


COMMANDS = {"demo": Command(no_arguments, demo)}
