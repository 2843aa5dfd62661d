"""Commands that correct memory (``edit``, ``forget``, ``restore``, ``history``) and show the
graph's knowledge (``entities``, ``facts``), over the operations of ``memory.curation`` (MCP
calls the same). Ids may be given by a unique prefix."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from memory.cli.base import Command, NotFound, UsageError, opened, read_file, summary, utf8
from memory.curation.operations import Curator
from memory.output import Output
from memory.store.config import Config
from memory.store.home import require_home
from memory.store.project import project_id
from memory.store.purge import purge


@asynccontextmanager
async def curating(config: Config) -> AsyncIterator[Curator]:
    """The curator of ``config``'s home, over its store (closed afterwards)."""
    async with opened(config, create=False) as (backend, _):
        yield Curator(backend, project_id(config.home), config.files_dir)


def _id_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", help="the memory's id, or a unique prefix of it")


def _edit_arguments(parser: argparse.ArgumentParser) -> None:
    _id_argument(parser)
    body = parser.add_mutually_exclusive_group()
    body.add_argument("--body", metavar="TEXT", help="its new text (default: edit it in $EDITOR)")
    body.add_argument("--body-file", type=Path, metavar="F", help="read its new text from F")
    parser.add_argument("--name", metavar="N", help="its new title")
    parser.add_argument("--reason", default="", help="why (kept in its history)")


def _in_editor(text: str) -> str:
    """``text`` as the person leaves it in ``$VISUAL`` or ``$EDITOR``."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        raise UsageError("no $EDITOR is set: give the new text with --body or --body-file")
    with tempfile.TemporaryDirectory(prefix="dualmem-edit-") as folder:
        path = Path(folder) / "memory.md"
        path.write_text(text, encoding="utf-8")
        done = subprocess.run([*shlex.split(editor), str(path)], check=False)
        if done.returncode != 0:
            raise UsageError(f"the editor exited with status {done.returncode}: nothing changed")
        return utf8(read_file(path, limit=1 << 30), "the edited text")


async def edit(args: argparse.Namespace, config: Config) -> Output:
    body = args.body
    if args.body_file is not None:
        body = utf8(read_file(args.body_file, limit=config.max_body_bytes), str(args.body_file))
    async with curating(config) as curator:
        if body is None and args.name is None:
            body = _in_editor((await curator.get(args.id)).body)
        before = await curator.get(args.id)
        after = await curator.update(args.id, body=body, name=args.name, reason=args.reason)
    changed = (after.body, after.name) != (before.body, before.name)
    return Output({"id": after.id, "changed": changed, "episode": after.to_json()},
                  f"{'updated' if changed else 'unchanged'}: {summary(after)}")


def _forget_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", nargs="+", metavar="ID",
                        help="the memories' ids, or unique prefixes of them")
    parser.add_argument("--reason", default="", help="why (kept in their history)")
    parser.add_argument("--purge", action="store_true",
                        help="remove their text from every file dualmem wrote (a leaked "
                        "secret): it cannot be restored")


async def forget(args: argparse.Namespace, config: Config) -> Output:
    if args.purge:
        return await _purge(args, config)
    async with curating(config) as curator:
        gone = [await curator.forget(given, args.reason) for given in args.ids]
    lines = [f"forgotten: {summary(episode)}" for episode in gone]
    lines.append("(dualmem restore ID brings one back; dualmem history ID shows it)")
    return Output({"forgotten": [episode.id for episode in gone]}, "\n".join(lines))


async def _purge(args: argparse.Namespace, config: Config) -> Output:
    """Forgotten for good (``memory.store.purge``): ids in full, as no trace is left to find
    a prefix in afterwards."""
    require_home(config.home)
    found = await purge(config, args.ids)
    missing = [episode_id for episode_id in args.ids if episode_id not in found]
    if missing and not found:
        raise NotFound(f"no memory with id {' '.join(missing)}; nothing purged")
    text = f"purged {' '.join(found)}" + (f"; not found: {' '.join(missing)}" if missing else "")
    return Output({"purged": found, "missing": missing}, text)


async def restore(args: argparse.Namespace, config: Config) -> Output:
    async with curating(config) as curator:
        episode = await curator.restore(args.id)
    return Output({"id": episode.id, "restored": True, "episode": episode.to_json()},
                  f"restored: {summary(episode)}")


async def history(args: argparse.Namespace, config: Config) -> Output:
    async with curating(config) as curator:
        found = await curator.history(args.id)
    lines = [f"{found.id}: " + ("forgotten" if found.current is None
                                else f"now {summary(found.current)}")]
    lines += [f"{v.at:%Y-%m-%d %H:%M}  {v.change}{f' ({v.reason})' if v.reason else ''}: "
              f"was {' '.join(v.episode.body.split())[:100]}" for v in found.versions]
    lines += [f"retired fact: {fact.fact} (until {fact.expired_at:%Y-%m-%d %H:%M})"
              for fact in found.retired_facts if fact.expired_at is not None]
    if found.superseded_by:
        lines.append(f"superseded by {found.superseded_by}")
    return Output(found.to_json(), "\n".join(lines))


def _knowledge_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", nargs="?", default="",
                        help="words of a name or fact, typos tolerated (default: every one)")
    parser.add_argument("--limit", type=int, default=20, metavar="N",
                        help="at most N (default 20)")


async def entities(args: argparse.Namespace, config: Config) -> Output:
    async with curating(config) as curator:
        found = await curator.entities(args.query, args.limit)
    lines = [f"{item.label:<10} {item.name}" for item in found.items]
    return Output(found.to_json(), "\n".join(lines) or f"no entities{_why(found.reason)}")


def _facts_arguments(parser: argparse.ArgumentParser) -> None:
    _knowledge_arguments(parser)
    parser.add_argument("--retired", action="store_true",
                        help="also facts no longer true (superseded, retired)")


async def facts(args: argparse.Namespace, config: Config) -> Output:
    async with curating(config) as curator:
        found = await curator.facts(args.query, args.limit, retired=args.retired)
    lines = [f"{item.source} {item.name} {item.target}: {item.fact}"
             + ("" if item.invalid_at is None else f" (until {item.invalid_at:%Y-%m-%d %H:%M})")
             for item in found.items]
    return Output(found.to_json(), "\n".join(lines) or f"no facts{_why(found.reason)}")


def _dedupe_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true",
                        help="only list the near-duplicates, merging nothing")


async def dedupe(args: argparse.Namespace, config: Config) -> Output:
    async with curating(config) as curator:
        found = await curator.dedupe(apply=not args.dry_run)
    verb = "would merge" if args.dry_run else "merged"
    lines = [f"{verb} into {summary(item.keep)}:\n" + "\n".join(
        f"    {summary(other)}" for other in item.others) for item in found]
    lines.append(f"{sum(len(item.others) for item in found)} near-duplicate(s) "
                 f"{'found' if args.dry_run else 'merged (dualmem history ID shows each)'}")
    return Output({"dry_run": args.dry_run, "sets": [item.to_json() for item in found]},
                  "\n".join(lines))


def _why(reason: str) -> str:
    return f": {reason}" if reason else ""


COMMANDS = {
    "edit": Command(_edit_arguments, edit),
    "forget": Command(_forget_arguments, forget),
    "restore": Command(_id_argument, restore),
    "history": Command(_id_argument, history),
    "entities": Command(_knowledge_arguments, entities),
    "facts": Command(_facts_arguments, facts),
    "dedupe": Command(_dedupe_arguments, dedupe),
}
