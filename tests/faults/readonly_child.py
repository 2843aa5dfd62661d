"""``python readonly_child.py HOME ID``: every read and one write through each layer, by the
Python API and by the CLI (in this process), on a home it cannot write. Prints one JSON report:
{layer: {"api": {...}, "cli": {command: {"code", "doc"}}}, "ledger": {...}}."""

from __future__ import annotations

import asyncio
import contextlib
import io
import sys
from pathlib import Path
from typing import Any

import orjson

from backends.errors import DualmemError
from backends.model import Episode
from memory.cli import main
from memory.store.selection import open_memory
from migrate import Ledger

LAYERS = ("file", "graph", "auto")


async def api(home: Path, layer: str, known: str) -> dict[str, Any]:
    report: dict[str, Any] = {}
    try:
        async with open_memory(home, layer) as store:
            report["count"] = await store.count()
            report["scan"] = sorted([e.id async for e in store.scan()])
            report["search"] = sorted(h.episode.id for h in await store.search("hello"))
            got = await store.get(known)
            report["get"] = None if got is None else got.id
            try:
                await store.upsert(Episode.create(group_id="g", kind="note", name="new", body="b"))
                report["write"] = "stored"
            except DualmemError as exc:
                report["write"] = {"type": type(exc).__name__, "message": str(exc)}
    except DualmemError as exc:
        report["open"] = {"type": type(exc).__name__, "message": str(exc)}
    return report


def cli(home: Path, layer: str, *argv: str) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["--home", str(home), "--backend", layer, "--json", *argv])
    return {"code": code, "doc": orjson.loads(out.getvalue())}


def ledger(home: Path) -> dict[str, Any]:
    """A ledger that was never created, in a home that cannot take one: empty, and says why."""
    opened = Ledger.open(home / "no-such-folder" / "ledger.sqlite3")
    try:
        report: dict[str, Any] = {"replayed": opened.replayed("s")}
        try:
            opened.record("s", [("ep-1", "g", "hash")])
            report["record"] = "recorded"
        except DualmemError as exc:
            report["record"] = {"type": type(exc).__name__, "message": str(exc)}
        return report
    finally:
        opened.close()


def run(home: Path, known: str) -> dict[str, Any]:
    report: dict[str, Any] = {"ledger": ledger(home)}
    for layer in LAYERS:
        report[layer] = {
            "api": asyncio.run(api(home, layer, known)),
            "cli": {
                "status": cli(home, layer, "status"),
                "search": cli(home, layer, "search", "hello", "--all-groups"),
                "list": cli(home, layer, "list", "--all-groups"),
                "get": cli(home, layer, "get", known),
                "add": cli(home, layer, "add", "--group", "g", "--kind", "note", "--name", "n",
                           "--body", "b"),
            },
        }
    return report


if __name__ == "__main__":
    print(orjson.dumps(run(Path(sys.argv[1]), sys.argv[2])).decode())
