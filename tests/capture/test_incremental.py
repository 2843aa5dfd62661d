"""Capture is a fold: a transcript captured at any sequence of its prefixes, cut anywhere (inside
a line too, as a Stop may see a line half written), leaves the same memories as capturing it
once; and a 50 MB transcript is read within the bounds."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capture.conftest import Project, open_project
from capture.shapes import SUMMARY, Transcript, working_session
from memory.capture.reading import Budget

FOLDER = "/work/notes-app"


def long_session() -> Transcript:
    """Two failures fixed, one still failing, reads, edits, lessons, a compaction, commits."""
    t = working_session(FOLDER)
    t.prompt("Now make the export keep the same quoting")
    t.read("src/notes/exporter.py")
    t.say("`exporter.py` writes rows with a hand-made join, the mirror of the old importer bug.")
    t.bash("mypy src", "src/notes/exporter.py:12: error: Incompatible return value type "
           "(got \"str\", expected \"list[str]\")  [return-value]\nFound 1 error in 1 file",
           code=1)
    t.write("src/notes/exporter.py", "import csv\n",
            said="I'll rewrite the exporter on csv.writer.")
    t.bash("mypy src", "Success: no issues found in 4 source files")
    t.bash("ruff check .", "src/notes/exporter.py:1:1: F401 `os` imported but unused\n"
           "Found 1 error.", code=1)
    t.say("Pattern: every reader and writer of CSV goes through the csv module")
    t.compact(SUMMARY)
    t.bash("pytest -q", "...F\nFAILED tests/test_exporter.py::test_roundtrip - assert 1 == 2\n"
           "1 failed, 3 passed in 0.2s", code=1)
    return t


async def memories_of(project: Project) -> set[tuple[str, str, str, str]]:
    return {(e.id, e.kind, e.name, e.body) for e in await project.memories()}


async def captured(root: Path, data: bytes, cuts: list[int]) -> set[tuple[str, str, str, str]]:
    async for project in open_project(root / "notes-app", "notes-app-5e551015"):
        path = root / "s.jsonl"
        for cut in cuts:
            path.write_bytes(data[:cut])
            # and in pieces each time
            await project.capture(path, root=Path(FOLDER), budget=Budget(bytes=3000))
        path.write_bytes(data)
        while (await project.capture(path, root=Path(FOLDER), final=True,
                                     budget=Budget(bytes=3000))).left:
            pass
        return await memories_of(project)
    raise AssertionError("no project")


SESSIONS = [working_session(FOLDER).data(), long_session().data()]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.sampled_from(range(len(SESSIONS))), cuts=st.lists(st.floats(0, 1), max_size=5))
def test_any_sequence_of_prefixes_gives_the_memories_of_one_pass(which: int,
                                                                 cuts: list[float]) -> None:
    data = SESSIONS[which]
    offsets = sorted(int(cut * len(data)) for cut in cuts)
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as pieces:
        once = asyncio.run(captured(Path(one), data, []))
        assert asyncio.run(captured(Path(pieces), data, offsets)) == once
    kinds = {"session_insight", "task_outcome", "gotcha", "codebase_discovery"}
    assert {kind for _, kind, _, _ in once} == kinds | ({"pattern"} if which else set())


async def test_a_50_mb_transcript(project: Project, tmp_path: Path) -> None:
    t = Transcript(str(project.folder))
    t.prompt("Refactor the storage layer")
    for n in range(400):
        path = f"src/store/part{n % 40}.py"
        t.read(path, "x = 1\n" * 2000)
        t.edit(path, said=f"Let me make part {n % 40} write through the journal first.")
        t.bash("pytest -q", "." * 50_000 + f"\n{n + 1} passed in 1.0s")
    data = t.data()
    assert 50 * 2**20 < len(data) < Budget().bytes  # read by one capture
    big = tmp_path / "big.jsonl"
    big.write_bytes(data)
    report = await project.capture(big)
    assert (report.lines, report.damaged, report.left, report.too_long) == (
        len(t.lines), 0, 0, 0)
    files = await project.by_kind("codebase_discovery")
    assert len(files) == 40
    [outcome] = await project.by_kind("task_outcome")
    assert outcome.data["metadata"]["checks"]["test"]["summary"] == "400 passed in 1.0s"


def met_twice(t: Transcript) -> int:
    """One failure (the same check, the same error) fixed twice, each by another file; the
    offset where the second begins."""
    t.prompt("Keep every note's tags")
    cut = 0
    for n, path in enumerate(("src/notes/store.py", "src/notes/index.py")):
        cut = len(t.data())
        t.bash("pytest -q", f"E   KeyError: 'tags'\n1 failed, {3 + n} passed in 0.2s", code=1)
        t.edit(path, "note", "note | tags", said=f"Let me carry the tags through `{path}`.")
        t.bash("pytest -q", f"{4 + n} passed in 0.2s")
    return cut


async def test_a_failure_fixed_twice_is_one_gotcha_in_any_sequence_of_stops(
        tmp_path: Path) -> None:
    t = Transcript(FOLDER)
    cut = met_twice(t)
    once = await captured(tmp_path / "once", t.data(), [])
    assert await captured(tmp_path / "pieces", t.data(), [cut]) == once
    [gotcha] = [body for _, kind, _, body in once if kind == "gotcha"]
    assert "src/notes/store.py" in gotcha and "src/notes/index.py" in gotcha

    async for project in open_project(tmp_path / "more" / "notes-app"):
        path = t.save(tmp_path / "more" / "s.jsonl")
        await project.capture(path, root=Path(FOLDER))
        t.prompt("Now the export")  # a turn that fixes nothing: the gotcha stays as it is
        t.bash("pytest -q", "5 passed in 0.2s")
        t.save(path)
        assert "gotcha" not in (await project.capture(path, root=Path(FOLDER))).kept.kinds
