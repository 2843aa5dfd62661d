"""A capturing hook with nothing new answers before the command line, the event loop and the
stores are imported; anything else goes the whole way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from backends.kinds import SESSION_INSIGHT
from capture.conftest import Project
from capture.shapes import working_session
from memory.capture.quick import nothing_new
from memory.store.dual import DualBackend
from memory.store.selection import open_memory

REPO = Path(__file__).resolve().parents[2]
WHOLE_WAY = ("asyncio", "argparse", "memory.cli", "fallback.store", "memory.capture.session",
             "orjson", "fallback.disk")
"""what the whole way imports; orjson and the file writes cost more than the quick answer"""


def stop_input(project: Project, transcript: Path, **extra: str) -> bytes:
    return orjson.dumps({"session_id": "s", "transcript_path": str(transcript),
                         "cwd": str(project.folder), "hook_event_name": "Stop", **extra})


def run_stop(project: Project, given: bytes, among: tuple[str, ...] = WHOLE_WAY
             ) -> tuple[str, list[str]]:
    """``python -m memory hook stop`` in a process of its own: what it printed, and which of
    ``among`` it imported (a package by its name)."""
    probe = (f"import runpy, sys\nsys.argv = ['dualmem', 'hook', 'stop']\n"
             f"try:\n    runpy.run_module('memory', run_name='__main__')\n"
             f"except SystemExit:\n    pass\n"
             f"print(sorted(set(sys.modules) & set({among!r})), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], input=given, capture_output=True,
                          cwd=project.folder, timeout=120, check=True)
    return done.stdout.decode().strip(), eval(done.stderr.decode().strip().splitlines()[-1])


async def test_a_stop_with_nothing_new_imports_nothing_of_the_whole_way(
        project: Project, tmp_path: Path) -> None:
    transcript = working_session(str(project.folder)).save(tmp_path / "s.jsonl")
    first, imported = run_stop(project, stop_input(project, transcript))
    assert first.startswith('{"systemMessage":"dualmem kept') and "memory.cli" in imported
    before = sorted((e.id, e.body) for e in await project.memories())
    again, imported = run_stop(project, stop_input(project, transcript))
    assert (again, imported) == ("{}", [])
    assert sorted((e.id, e.body) for e in await project.memories()) == before


def test_only_a_capturing_hook_with_nothing_new_is_answered_quickly(
        project: Project, tmp_path: Path) -> None:
    transcript = working_session(str(project.folder)).save(tmp_path / "s.jsonl")
    given = stop_input(project, transcript)
    env = {"DUALMEM_HOME": str(project.home)}
    assert not nothing_new(["hook", "stop"], lambda: given, env)  # no cursor yet
    subprocess.run([sys.executable, "-m", "memory", "--home", str(project.home), "hook",
                    "stop"], input=given, capture_output=True, cwd=REPO, check=True)
    assert nothing_new(["hook", "stop"], lambda: given, env)
    assert nothing_new(["--home", str(project.home), "hook", "pre-compact"], lambda: given, {})
    assert not nothing_new(["hook", "prompt"], lambda: given, env)
    assert not nothing_new(["--json", "hook", "stop"], lambda: given, env)
    assert not nothing_new(["hook", "stop"], lambda: b"[1, 2]", env)
    told = stop_input(project, transcript, last_assistant_message="Gotcha: X needs Y")
    assert not nothing_new(["hook", "stop"], lambda: told, env)
    assert not nothing_new(["hook", "stop"], lambda: given, {"DUALMEM_HOME": str(tmp_path)})
    with transcript.open("ab") as grown:
        grown.write(b'{"type": "user"')  # a line being written: the whole way decides
    assert not nothing_new(["hook", "stop"], lambda: given, env)


@pytest.mark.parametrize("where", ["subagent", "rewritten"])
def test_a_subagents_new_lines_or_a_rewritten_transcript_go_the_whole_way(
        project: Project, tmp_path: Path, where: str) -> None:
    session = working_session(str(project.folder))
    transcript = session.save(tmp_path / "s.jsonl")
    given = stop_input(project, transcript)
    env = {"DUALMEM_HOME": str(project.home)}
    subprocess.run([sys.executable, "-m", "memory", "--home", str(project.home), "hook",
                    "stop"], input=given, capture_output=True, cwd=REPO, check=True)
    assert nothing_new(["hook", "stop"], lambda: given, env)
    if where == "subagent":
        session.save(tmp_path / "s" / "subagents" / "agent-1.jsonl")
    else:
        transcript.write_bytes(transcript.read_bytes().replace(b"Done.", b"Fine."))
    assert not nothing_new(["hook", "stop"], lambda: given, env)


def test_a_path_not_written_plainly_goes_the_whole_way_which_answers_the_same(
        project: Project, tmp_path: Path) -> None:
    # The quick answers take their paths as text: one that text and pathlib read differently
    # (``.``, ``..``, a repeated or trailing slash) is the whole way's.
    transcript = working_session(str(project.folder)).save(tmp_path / "s.jsonl")
    given = stop_input(project, transcript)
    env = {"DUALMEM_HOME": str(project.home)}
    subprocess.run([sys.executable, "-m", "memory", "--home", str(project.home), "hook",
                    "stop"], input=given, capture_output=True, cwd=REPO, check=True)

    def quick(stdin: bytes, env: dict[str, str]) -> bool:
        return nothing_new(["hook", "stop"], lambda: stdin, env)

    assert quick(given, env)
    unplain = [f"{tmp_path}/./s.jsonl", f"{tmp_path}//s.jsonl",
               f"{tmp_path}/../{tmp_path.name}/s.jsonl"]
    for path in unplain:
        assert not quick(given.replace(str(transcript).encode(), path.encode()), env), path
    assert not quick(given, {"DUALMEM_HOME": f"{project.home}/"})
    cwd = f'"cwd":"{project.folder}'.encode()
    assert quick(given, {}) and not quick(given.replace(cwd, cwd + b"/"), {})
    told = given.replace(str(transcript).encode(), unplain[0].encode())
    said, imported = run_stop(project, told)
    assert said == "{}" and "memory.cli" in imported


HEAVY = ("asyncio", "graphiti_core", "kuzu", "pydantic", "rapidfuzz")
"""what a Stop with new lines must not import: it writes the journal alone, without a loop"""


async def test_a_stop_with_new_lines_writes_the_journal_without_a_loop_and_the_graph_gets_it(
        project: Project, tmp_path: Path) -> None:
    session = working_session(str(project.folder))
    transcript = session.save(tmp_path / "s.jsonl")
    run_stop(project, stop_input(project, transcript))
    session.say("`src/notes/exporter.py` writes the notes back as CSV, quoting commas.")
    session.save(transcript)
    said, imported = run_stop(project, stop_input(project, transcript), among=HEAVY)
    assert said.startswith('{"systemMessage":"dualmem kept') and imported == []
    [insight] = await project.by_kind(SESSION_INSIGHT)
    assert "exporter.py" in insight.body
    async with open_memory(project.home, "auto") as store:  # the holder replays the journal
        assert isinstance(store, DualBackend) and store.holds_graph
        async with store.graph_held() as graph:
            held = await graph.get(insight.id)
    assert held is not None and held.body == insight.body
