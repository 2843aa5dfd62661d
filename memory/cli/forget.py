"""``dualmem forget --purge ID ...``: memories forgotten for good, their text out of every file of
the home (``memory.store.purge``), where ``delete`` keeps it for ``restore``."""

from __future__ import annotations

import argparse

from memory.cli.base import Command, NotFound, UsageError
from memory.output import Output
from memory.store.config import Config
from memory.store.home import require_home
from memory.store.purge import purge


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", nargs="+", metavar="id", help="the memories' ids")
    parser.add_argument("--purge", action="store_true",
                        help="remove their text from every file dualmem wrote (a leaked "
                        "secret): it cannot be restored")


async def forget(args: argparse.Namespace, config: Config) -> Output:
    if not args.purge:
        raise UsageError("forget needs --purge here (dualmem delete ID ... forgets, keeping "
                         "the text of view bullets for restore)")
    require_home(config.home)
    found = await purge(config, args.ids)
    missing = [episode_id for episode_id in args.ids if episode_id not in found]
    if missing and not found:
        raise NotFound(f"no memory with id {' '.join(missing)}; nothing purged")
    text = f"purged {' '.join(found)}" + (f"; not found: {' '.join(missing)}" if missing else "")
    return Output({"purged": found, "missing": missing}, text)


COMMANDS = {"forget": Command(_arguments, forget)}
