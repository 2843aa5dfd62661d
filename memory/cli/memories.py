"""Commands on single memories: ``add``, ``search``, ``get``, ``list``, ``delete``."""

from __future__ import annotations

import argparse
from pathlib import Path

from backends.kinds import AGENT_KINDS
from backends.model import Episode, Hit, natural_key
from memory.cli.base import (
    Command,
    NotFound,
    UsageError,
    filters,
    group_options,
    kind_option,
    opened,
    read_file,
    reads_the_journal,
    summary,
    utf8,
)
from memory.curation.ids import resolve
from memory.output import Output, printable
from memory.store.config import Config
from memory.store.project import project_id


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--group", metavar="G",
                        help="the group to store it in (default: the project's group)")
    parser.add_argument("--kind", required=True, metavar="K",
                        help=f"what it is: {', '.join(AGENT_KINDS)}, ... (an open set)")
    parser.add_argument("--name", required=True, metavar="N", help="a one-line title")
    body = parser.add_mutually_exclusive_group(required=True)
    body.add_argument("--body", metavar="TEXT", help="the memory itself")
    body.add_argument("--body-file", type=Path, metavar="F",
                      help="read the body from F instead (UTF-8 text or JSON)")
    parser.add_argument("--key", help="a natural key: adding the same key again updates "
                        "(default: the text's, as MCP's add_memory keys it)")
    parser.add_argument("--source", default="cli", help="who wrote it (default: cli)")


async def add(args: argparse.Namespace, config: Config) -> Output:
    body = args.body
    if body is None:
        raw = read_file(args.body_file, limit=config.max_body_bytes)
        body = utf8(raw, f"body file {args.body_file}")
    group = project_id(config.home) if args.group is None else args.group
    # Without --key, the natural key every writer of free text uses (MCP's add_memory, the
    # views): the same text again is the same memory, whoever wrote it.
    key = args.key if args.key is not None else natural_key(body) or None
    episode = Episode.create(group_id=group, kind=args.kind, name=args.name, body=body,
                             key=key, source=args.source)
    async with opened(config, create=True) as (backend, _):
        receipt = await backend.upsert(episode)
    pending = "" if not receipt.pending else (
        " (the journal; replayed into the graph server once it answers)"
        if config.graph_url is not None else " (the journal; the graph's holder indexes it)")
    return Output(
        receipt.model_dump(mode="json"),
        f"stored {receipt.id} in the {receipt.layer} layer{pending}\n  {receipt.location}",
    )


def _search_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="keywords; misspellings are tolerated")
    group_options(parser)
    kind_option(parser)
    parser.add_argument("--limit", type=int, default=10, metavar="N",
                        help="at most N hits (default 10)")
    parser.add_argument("--rerank", action="store_true",
                        help="the configured LLM reorders the first hits (questions whose "
                        "answer spans memories; bounded cost, see the README)")


async def search(args: argparse.Namespace, config: Config) -> Output:
    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    async with opened(config, create=False, one_shot=True) as (backend, _):
        hits = await backend.search(args.query, limit=args.limit, **filters(args, config.home))
    if args.rerank:
        hits = await _reranked(args.query, hits, config)
    lines = [f"{hit.score:.2f}  {summary(hit.episode)}\n      "
             f"{' '.join(hit.episode.body.split())[:100].rstrip()}" for hit in hits]
    return Output(
        {"query": printable(args.query), "hits": [hit.model_dump(mode="json") for hit in hits]},
        "\n".join(lines) or "no matches",
    )


async def _reranked(query: str, hits: list[Hit], config: Config) -> list[Hit]:
    from memory.store.providers import llm_for
    from memory.store.rerank import rerank

    llm = llm_for(config)
    if llm is None:
        raise UsageError("--rerank needs an LLM: dualmem config set llm [NAME:]MODEL[@URL]")
    return await rerank(llm, query, hits)


def _search_loopless(args: argparse.Namespace, config: Config) -> bool:
    return reads_the_journal(args, config) and not args.rerank  # the LLM's client needs a loop


def _id_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", help="the memory's id (as add, search and list show it), or a "
                        "unique prefix of it")


async def get(args: argparse.Namespace, config: Config) -> Output:
    async with opened(config, create=False, one_shot=True) as (backend, _):
        episode = await backend.get(await resolve(backend, args.id))
    if episode is None:  # deleted meanwhile
        raise NotFound(f"no episode with id {args.id}")
    fields = episode.model_dump(mode="json", exclude_none=True)
    body = fields.pop("body")
    header = "\n".join(f"{field + ':':<12}{value}" for field, value in fields.items())
    return Output({"episode": episode.model_dump(mode="json")}, f"{header}\n\n{body}")


def _list_arguments(parser: argparse.ArgumentParser) -> None:
    group_options(parser)
    kind_option(parser)


async def list_(args: argparse.Namespace, config: Config) -> Output:
    async with opened(config, create=False, one_shot=True) as (backend, _):
        episodes = [e async for e in backend.scan(**filters(args, config.home))]
    lines = [f"{e.created_at:%Y-%m-%d %H:%M}  {summary(e)}" for e in episodes]
    lines.append(f"{len(episodes)} episode(s)")
    return Output(
        {"count": len(episodes), "episodes": [e.model_dump(mode="json") for e in episodes]},
        "\n".join(lines),
    )


def _ids_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", nargs="+", metavar="id",
                        help="the memories' ids (as add, search, list and status show them)")


async def delete(args: argparse.Namespace, config: Config) -> Output:
    async with opened(config, create=False) as (backend, _):
        keys = [await resolve(backend, given) for given in args.ids]
        missing = [key for key in keys if not await backend.delete(key)]
    if missing:
        done = len(keys) - len(missing)
        raise NotFound(f"no episode with id {' '.join(missing)}; "
                       f"{f'the other {done} deleted' if done else 'nothing deleted'}")
    if len(keys) == 1:
        return Output({"id": keys[0], "deleted": True}, f"deleted {keys[0]}")
    return Output({"ids": keys, "deleted": True}, f"deleted {' '.join(keys)}")


COMMANDS = {
    "add": Command(_add_arguments, add),
    "search": Command(_search_arguments, search, _search_loopless),
    "get": Command(_id_argument, get),
    "list": Command(_list_arguments, list_),
    "delete": Command(_ids_argument, delete),
}
