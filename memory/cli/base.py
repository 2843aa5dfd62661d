"""What every command group shares: the ``Command`` shape, the CLI's own errors, opening the
store, the group options and reading files named on the command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, NamedTuple

from backends.errors import DualmemError, InvalidEpisode
from backends.kinds import KINDS
from backends.model import Episode, check_group_id
from backends.protocol import MemoryBackend
from backends.safe_files import MiB, read_regular
from memory.output import Output
from memory.store.config import Config
from memory.store.home import require_home
from memory.store.project import project_id
from memory.store.selection import Selection, open_backend

Handler = Callable[[argparse.Namespace, Config], Awaitable[Output]]


def never(args: argparse.Namespace, config: Config) -> bool:
    return False


def reads_the_journal(args: argparse.Namespace, config: Config) -> bool:
    """A one-shot read of ``file`` or ``auto``: the file layer answers, and it awaits nothing
    (the graph's driver needs a loop)."""
    return config.backend in ("file", "auto")


class Command(NamedTuple):
    arguments: Callable[[argparse.ArgumentParser], object]
    run: Handler
    loopless: Callable[[argparse.Namespace, Config], bool] = never
    """whether this command line runs without an event loop (``memory.cli.driver``): it
    awaits nothing that only a loop can wait on"""


def no_arguments(parser: argparse.ArgumentParser) -> None:
    """For commands that take only the global options."""


class UsageError(DualmemError):
    """The command line itself is wrong (exit status 2)."""


class NotFound(DualmemError):
    """No episode has the id asked for."""


class FileArgumentError(DualmemError):
    """A file named on the command line cannot be read or written."""


@asynccontextmanager
async def opened(
    config: Config, *, create: bool, one_shot: bool = False
) -> AsyncIterator[tuple[MemoryBackend, Selection]]:
    """The store of ``config.home``, closed afterwards. Only a command that writes may
    ``create`` the home; any other fails with ``HomeNotFound`` where there is none. A
    ``one_shot`` read takes no graph lock (see ``open_backend``): the journal answers it."""
    if not create:
        require_home(config.home)
    backend, selection = await open_backend(config, one_shot=one_shot)
    if selection.notice:
        print(f"dualmem: {selection.notice}", file=sys.stderr)
    try:
        yield backend, selection
    finally:
        await backend.aclose()


def group_options(parser: argparse.ArgumentParser, *, everywhere: bool = True) -> None:
    """``--group G`` (repeatable), and ``--all-groups`` when ``everywhere``."""
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--group", dest="groups", action="append", metavar="G",
                       help="only this group (repeatable; default: the project's group)")
    if everywhere:
        scope.add_argument("--all-groups", action="store_true",
                           help="every group in the home, not only the project's")


def kind_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", metavar="K",
                        help=f"only this kind ({', '.join(KINDS)}, ...)")


def chosen_groups(args: argparse.Namespace, home: Path) -> list[str] | None:
    """The groups ``--group`` names, every group (None) with ``--all-groups``, else the
    project's group."""
    if getattr(args, "all_groups", False):
        return None
    if args.groups:
        return [check_group_id(group) for group in args.groups]
    return [project_id(home)]


def filters(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    """``group_ids`` and ``kinds`` for ``search`` and ``scan`` from the group and kind options."""
    return {"group_ids": chosen_groups(args, home), "kinds": [args.kind] if args.kind else None}


JSON_FILE_LIMIT = 64 * MiB
"""a session's or a turn's JSON named on the command line (each memory in it is far smaller)"""
IMPORT_FILE_LIMIT = 1024 * MiB
"""a JSON Lines file to import: read whole, so bounded (an export of ~500k usual memories)"""


def read_file(path: Path, *, limit: int) -> bytes:
    """The bytes of the regular file ``path`` names, at most ``limit`` of them: a FIFO, a device
    or a folder is refused (``FileRefused``) rather than read until memory runs out or for ever."""
    try:
        return read_regular(path, limit=limit)
    except OSError as exc:
        raise FileArgumentError(f"cannot read {path}: {exc.strerror or exc}") from None


def utf8(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidEpisode(f"{where} is not valid UTF-8 (bad byte at {exc.start})") from None


def summary(episode: Episode) -> str:
    return f"{episode.id}  {episode.group_id}/{episode.kind}  {episode.name}"
