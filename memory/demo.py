"""``dualmem demo``: the main job end to end in a temporary home, saying what it does.

The demo is the list ``STEPS``; later parts of dualmem (migration, seeds, context) add theirs.
A step drives the real command line in-process through ``Demo.cli``, so what it shows is exactly
what a person would type, and any failure fails the demo.
"""

from __future__ import annotations

import asyncio
import shlex
import sys
import tempfile
import textwrap
from asyncio.subprocess import PIPE
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from backends.errors import DualmemError
from backends.kinds import CODEBASE_DISCOVERY
from backends.model import stable_id
from memory.output import Output

Runner = Callable[[Sequence[str]], Awaitable[Output]]


class DemoFailed(DualmemError):
    """A demo step saw something other than what dualmem promises."""


@dataclass
class Demo:
    """What a step works with: a scratch ``folder``, the CLI, and a narrator."""

    folder: Path
    home: Path
    _runner: Runner
    _global_args: list[str]
    _echo: Callable[[str], None] | None
    steps: list[dict[str, Any]] = field(default_factory=list)
    project_id: str = ""
    """The group memories go to when a command names none (set by ``init``)."""

    def begin(self, title: str) -> None:
        self.steps.append({"title": title, "log": []})
        self._say(f"\n== {title}")

    async def cli(self, *argv: str) -> dict[str, Any]:
        """Run ``dualmem ARGV`` against the demo home; returns its JSON document."""
        output = await self._runner([*self._global_args, *argv])
        self.steps[-1]["log"].append({"command": ["dualmem", *argv], "result": output.data})
        self._say(f"$ dualmem {shlex.join(argv)}")
        if output.text:
            self._say(textwrap.indent(output.text, "  "))
        return output.data

    def note(self, text: str) -> None:
        self.steps[-1]["log"].append({"note": text})
        self._say(f"-> {text}")

    def _say(self, text: str) -> None:
        if self._echo is not None:
            self._echo(text)


@dataclass(frozen=True)
class Step:
    title: str
    run: Callable[[Demo], Awaitable[None]]


async def _init(demo: Demo) -> None:
    demo.project_id = (await demo.cli("init"))["project_id"]
    demo.note(f"commands default to the project's group, {demo.project_id}")


_DISCOVERY_KEY = "memory/cli/__init__.py"


async def _add(demo: Demo) -> None:
    await demo.cli(
        "add", "--kind", "pattern", "--name", "Retry flaky network calls",
        "--body", "Wrap outbound HTTP calls in a retry with exponential backoff and jitter.",
        "--key", "retry-network",
    )
    await demo.cli(
        "add", "--kind", "gotcha", "--name", "Kuzu allows one writer",
        "--body", "Only one process may open the graph database read-write; others get a lock "
        "error, so their writes go to the file layer and are replayed later.",
    )
    structured = demo.folder / "discovery.json"
    structured.write_bytes(orjson.dumps({
        "file": _DISCOVERY_KEY,
        "purpose": "the dualmem command line: parse, call the async API, print",
        "patterns": ["one function per command", "errors exit non-zero with one line"],
    }, option=orjson.OPT_INDENT_2))
    await demo.cli(
        "add", "--kind", "codebase_discovery", "--name", "What the CLI does",
        "--body-file", str(structured), "--key", _DISCOVERY_KEY,
    )


async def _search(demo: Demo) -> None:
    # "netwrk" is misspelled on purpose: search is typo tolerant.
    result = await demo.cli("search", "retry netwrk calls", "--limit", "3")
    if not result["hits"]:
        raise DemoFailed("search found nothing for 'retry netwrk calls'")


async def _get(demo: Demo) -> None:
    result = await demo.cli("get", stable_id(demo.project_id, CODEBASE_DISCOVERY, _DISCOVERY_KEY))
    keys = sorted(orjson.loads(result["episode"]["body"]))
    demo.note(f"its body is structured JSON with keys {', '.join(keys)}")


async def _list(demo: Demo) -> None:
    await demo.cli("list")


async def _status(demo: Demo) -> None:
    await demo.cli("status")


# Another process: it holds the graph through ``auto`` until told to stop, then reports.
_HOLDER = """
import asyncio, sys, orjson
from memory.store.selection import open_memory
async def main():
    async with open_memory(sys.argv[1], "auto") as store:
        print("holding" if store.holds_graph else "not holding", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        for _ in range(50):
            if (await store.status()).pending == 0:
                break
            await asyncio.sleep(0.1)
        print(orjson.dumps((await store.status()).to_json()).decode(), flush=True)
asyncio.run(main())
"""


async def _writes_while_held(demo: Demo) -> None:
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOLDER, str(demo.home), stdin=PIPE, stdout=PIPE
    )
    try:
        assert holder.stdout is not None
        if (await holder.stdout.readline()).strip() != b"holding":
            raise DemoFailed("the second process could not hold the graph")
        demo.note(f"process {holder.pid} now holds the graph (Kùzu admits one writer)")
        added = await demo.cli(
            "--backend", "auto", "add", "--kind", "gotcha",
            "--name", "Writes never wait for the graph",
            "--body", "A process that does not hold the graph writes the journal (the files), "
            "which every process reads; the holder indexes it within about a second.",
        )
        demo.note(f"stored in the {added['layer']} layer, pending={added['pending']}")
        out, _ = await asyncio.wait_for(holder.communicate(b"stop\n"), 30)
    finally:
        if holder.returncode is None:
            holder.kill()
            await holder.wait()
    seen = orjson.loads(out.splitlines()[-1])
    if seen["pending"] != 0:
        raise DemoFailed(f"the holder still had {seen['pending']} pending memories")
    demo.note("the holder indexed the journal's new memory into the graph, then exited: "
              f"{seen['pending']} pending")
    report = await demo.cli("--backend", "auto", "repair")
    if any(report["differences"].values()):
        raise DemoFailed(f"the graph differs from the journal: {report['differences']}")
    demo.note(f"the graph equals the journal ({report['journal']} memories)")
    await demo.cli("--backend", "graph", "search", "writes wait graph")


async def _round_trip(demo: Demo) -> None:
    exported, again = demo.folder / "export.jsonl", demo.folder / "again.jsonl"
    copy = demo.folder / "copy"
    await demo.cli("export", str(exported))
    await demo.cli("--home", str(copy), "import", str(exported))
    await demo.cli("--home", str(copy), "export", str(again))
    if exported.read_bytes() != again.read_bytes():
        raise DemoFailed(f"{again} differs from {exported} after an import")
    demo.note("a fresh home that imported the export exports byte-for-byte the same file")


async def _agent_memory(demo: Demo) -> None:
    (demo.folder / "README.md").write_text("# Demo project\nA small service that stores notes.\n")
    await demo.cli("seed")
    again = await demo.cli("seed")
    if again["system"]["created"] or again["system"]["updated"]:
        raise DemoFailed("seeding a second time wrote something")
    demo.note("seeding again wrote nothing: it compares before it writes")
    session = demo.folder / "session_001.json"
    session.write_bytes(orjson.dumps({
        "subtasks_completed": ["store-notes"],
        "discoveries": {
            "files_understood": {"notes/store.py": "saves notes atomically"},
            "patterns_found": ["Write to a temp file, fsync, then rename"],
            "gotchas_encountered": ["rename() is not atomic across file systems"],
        },
        "what_worked": ["atomic writes"], "what_failed": [],
        "recommendations_for_next_session": ["add a lock for concurrent writers"],
    }))
    await demo.cli("session", "save", str(session))
    turn = demo.folder / "turn.json"
    turn.write_bytes(orjson.dumps({
        "feature_id": "FEAT-1", "task_id": "TASK-1", "turn": 1, "coach_decision": "revise",
        "coach_feedback": "cover the empty-note case", "progress_summary": "store written",
    }))
    await demo.cli("turns", "record", str(turn))
    await demo.cli("turns", "latest", "--feature", "FEAT-1")
    await demo.cli("export", "--markdown", str(demo.folder / "markdown"))


async def _context(demo: Demo) -> None:
    found = await demo.cli("context", "--task", "Save notes atomically", "--complexity", "3")
    if not found["markdown"] or found["tokens_used"] > found["budget"]:
        raise DemoFailed("the context of a task is empty or over its budget")
    demo.note(f"{found['tokens_used']} of {found['budget']} tokens, from what the session saved")
    turn = await demo.cli("context", "--task", "Store notes", "--id", "TASK-1", "--feature",
                          "FEAT-1", "--autobuild", "--actor", "player", "--turn", "2")
    if "cover the empty-note case" not in turn["markdown"]:
        raise DemoFailed("the player's turn 2 did not get the coach's feedback on turn 1")
    demo.note("the player's turn 2 starts from the coach's feedback on turn 1")

STEPS: list[Step] = [
    Step("create a memory home", _init),
    Step("add memories: a pattern, a gotcha, a structured JSON discovery", _add),
    Step("search them", _search),
    Step("read one back by id", _get),
    Step("list the project's memories", _list),
    Step("what is stored, where, and why that layer", _status),
    Step("write while another process holds the graph; it indexes the write", _writes_while_held),
    Step("seed system knowledge, save a session and a turn, export as Markdown", _agent_memory),
    Step("the context a task needs, within its token budget", _context),
    Step("export, import into a fresh home, export again", _round_trip),
]


async def run_demo(
    runner: Runner, *, backend: str | None = None, echo: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Run every step in a temporary folder (removed afterwards); returns the log."""
    with tempfile.TemporaryDirectory(prefix="dualmem-demo-") as scratch:
        folder = Path(scratch)
        home = folder / "home"
        global_args = ["--home", str(home), *(["--backend", backend] if backend else [])]
        demo = Demo(folder, home, runner, global_args, echo)
        if echo is not None:
            echo(f"demo home: {home} (temporary; every command below runs with --home there)")
        for step in STEPS:
            demo.begin(step.title)
            await step.run(demo)
        if echo is not None:
            echo(f"\ndemo finished: {len(STEPS)} steps ok")
    return {"home": str(home), "steps": demo.steps, "ok": True}
