"""Commands moving whole memories in and out: ``import`` and ``export`` (JSON Lines, Markdown)."""

from __future__ import annotations

import argparse
from pathlib import Path

import orjson

from backends.errors import DualmemError, InvalidEpisode, WriteFailed
from backends.model import Episode, ensure_body_fits
from backends.protocol import upsert_all
from memory.agent.markdown import export_markdown
from memory.agent.records import json_object
from memory.cli.base import IMPORT_FILE_LIMIT, Command, FileArgumentError, opened, read_file
from memory.cli.progress import Progress
from memory.output import Output
from memory.store.config import Config

IMPORT_BATCH = 500


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


def _import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE.jsonl",
                        help="one episode per line, as export writes them")


async def import_(args: argparse.Namespace, config: Config) -> Output:
    raw = read_file(args.file, limit=IMPORT_FILE_LIMIT)
    episodes = _parse_jsonl(raw, args.file, config.max_body_bytes)
    stored = 0
    async with opened(config, create=True) as (backend, selection):
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
    target.add_argument("file", type=Path, nargs="?", metavar="FILE.jsonl",
                        help="write one episode per line here (import reads it back)")
    target.add_argument("--markdown", type=Path, metavar="DIR",
                        help="instead: patterns, gotchas, codebase map and sessions as Markdown")


async def export(args: argparse.Namespace, config: Config) -> Output:
    if args.markdown is not None:
        async with opened(config, create=False, one_shot=True) as (backend, _):
            try:
                files = await export_markdown(backend, args.markdown)
            except OSError as exc:
                raise FileArgumentError(f"cannot write {args.markdown}: {exc}") from None
        return Output({"folder": str(args.markdown), "files": files},
                      f"wrote {len(files)} Markdown file(s) to {args.markdown}")
    written = 0
    async with opened(config, create=False, one_shot=True) as (backend, _):
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


COMMANDS = {
    "import": Command(_import_arguments, import_),
    "export": Command(_export_arguments, export),
}
