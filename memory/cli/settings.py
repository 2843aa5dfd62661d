"""``dualmem config set NAME VALUE`` and ``dualmem config show``: the settings a project keeps
in its home (``memory.store.settings``), committed with it so that every clone uses them."""

from __future__ import annotations

import argparse

from backends.graph.provider_names import NAMED
from memory.cli.base import Command, UsageError
from memory.output import Output
from memory.store.config import Config
from memory.store.home import require_home
from memory.store.settings import CONFIG, PASSWORD, SETTINGS, read_settings, store_setting


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["set", "show"],
                        help="set: keep NAME = VALUE ('' removes it); show: what is kept")
    parser.add_argument("name", nargs="?", choices=list(SETTINGS),
                        help="graph-url (a FalkorDB server's graph; a password in it is kept "
                        f"apart, in the home's ignored {PASSWORD}), embedder or llm "
                        f"([NAME:]MODEL[@URL]; NAME: {', '.join(NAMED)}), keep-damaged "
                        "(damaged graph copies kept: a count, 3, or days, 30d), or infer-areas "
                        "(on: the session-start hook's task context asks the LLM which areas "
                        "the task touches)")
    parser.add_argument("value", nargs="?", help="the value")


async def config_command(args: argparse.Namespace, config: Config) -> Output:
    require_home(config.home)
    if args.action == "set":
        if args.name is None or args.value is None:
            raise UsageError("config set needs NAME and VALUE (see: dualmem config --help)")
        kept = store_setting(config.home, args.name, args.value)
        where = config.home / CONFIG
        return Output({"name": args.name, "value": kept, "file": str(where)},
                      f"{args.name} = {kept or '(removed)'} in {where}")
    settings = read_settings(config.home)
    shown = {name: settings[key] for name, key in SETTINGS.items() if key in settings}
    return Output({"settings": shown, "file": str(config.home / CONFIG)},
                  "\n".join(f"{name} = {value}" for name, value in shown.items())
                  or "no settings kept")


COMMANDS = {"config": Command(_arguments, config_command)}
