"""A session's transcript becomes memories: a session insight, discoveries of the files it
changed or studied, the failures it fixed, its task outcome; incrementally, idempotently, with
the agent's own words winning and nothing poorer replacing anything richer."""

from __future__ import annotations

from pathlib import Path

import orjson

from backends.search.entities import extract
from capture.conftest import Project
from capture.shapes import SUMMARY, Transcript, working_session
from capture.test_redact import SECRETS
from memory.agent.memories import AgentMemory
from memory.capture.cursor import cursor_name
from memory.capture.lessons import MAX_LESSONS


async def test_a_session_becomes_its_memories(project: Project, tmp_path: Path) -> None:
    path = working_session(str(project.folder)).save(tmp_path / "s.jsonl")
    report = await project.capture(path)
    assert report.lines > 0 and report.damaged == 0 and not report.skipped
    assert report.kept.kinds == {"session_insight": 1, "task_outcome": 1,
                                 "codebase_discovery": 2, "gotcha": 2}
    [insight] = await project.by_kind("session_insight")
    data = insight.data
    assert data["task"] == "Fix the CSV importer: quoted fields with commas break the import"
    assert data["discoveries"]["files_changed"] == ["src/notes/importer.py"]
    assert set(data["discoveries"]["files_understood"]) == {"src/notes/importer.py",
                                                            "tests/test_importer.py"}
    assert any("2 passed" in item for item in data["what_worked"])
    assert "commit: importer: read rows with csv.reader" in data["what_worked"]
    assert data["what_failed"] == ["`python -m pytest -q tests/test_importer.py`: "
                                   "AssertionError: assert ['\"a', 'b\"', 'c'] == ['a,b', 'c']"]
    gotchas = {e.source: e for e in await project.by_kind("gotcha")}
    fixed = gotchas["capture"].data
    assert fixed["error"].startswith("AssertionError: assert")  # the key line, not the log
    assert fixed["fix"] == ("changed src/notes/importer.py; then "
                            "`python -m pytest -q tests/test_importer.py` passed")
    assert gotchas["claude_code"].body.startswith("csv.reader needs newline=''")
    files = {e.name: e.data for e in await project.by_kind("codebase_discovery")}
    notes = files["src/notes/importer.py"]["notes"]
    assert "Switch the importer to csv.reader so quoted commas are kept" in notes  # its intent
    assert "commit: importer: read rows with csv.reader" in notes  # the commit's message
    assert "parses CSV rows into notes; the quoting bug lived here" in notes  # the compaction's
    assert files["tests/test_importer.py"]["changed"] is False  # studied in the summary
    [outcome] = await project.by_kind("task_outcome")
    assert outcome.data["success"] is True
    assert outcome.data["metadata"]["files_modified"] == ["src/notes/importer.py"]
    assert outcome.data["metadata"]["checks"]["test"]["summary"] == "2 passed in 0.10s"


async def test_a_second_capture_changes_nothing(project: Project, tmp_path: Path) -> None:
    path = working_session(str(project.folder)).save(tmp_path / "s.jsonl")
    await project.capture(path)
    before = [(e.id, e.body, e.valid_at) for e in await project.memories()]
    cursor = (project.home / cursor_name(path)).read_bytes()
    again = await project.capture(path)
    assert again.lines == 0 and not again.kept
    assert [(e.id, e.body, e.valid_at) for e in await project.memories()] == before
    assert (project.home / cursor_name(path)).read_bytes() == cursor
    # Read again from the start (the cursor lost): the same memories, none rewritten.
    (project.home / cursor_name(path)).unlink()
    assert not (await project.capture(path)).kept
    assert [(e.id, e.body, e.valid_at) for e in await project.memories()] == before


async def test_the_session_insight_grows_as_the_session_goes_on(project: Project,
                                                                tmp_path: Path) -> None:
    t = Transcript(str(project.folder))
    t.prompt("Add paging to the notes list")
    path = t.save(tmp_path / "s.jsonl")
    await project.capture(path)
    t.edit("src/notes/list.py", said="Let me add a page size argument to the list view.")
    t.save(path)
    await project.capture(path)
    [insight] = await project.by_kind("session_insight")
    assert insight.data["discoveries"]["files_changed"] == ["src/notes/list.py"]
    assert len(await project.by_kind("task_outcome")) == 1


async def test_the_agents_own_discovery_wins(project: Project, tmp_path: Path) -> None:
    mine = await AgentMemory(project.store, project.id).add_codebase_discoveries(
        {"src/notes/importer.py": "CSV import entry point; see docs/import.md"})
    path = working_session(str(project.folder)).save(tmp_path / "s.jsonl")
    await project.capture(path)
    stored = await project.store.get(mine[0].id)
    assert stored is not None and stored.body == mine[0].body and stored.source == "agent"


async def test_discoveries_merge_across_sessions_and_never_get_poorer(project: Project,
                                                                      tmp_path: Path) -> None:
    first = working_session(str(project.folder)).save(tmp_path / "one.jsonl")
    await project.capture(first)
    [rich] = [e for e in await project.by_kind("codebase_discovery")
              if e.name == "src/notes/importer.py"]
    other = Transcript(str(project.folder), session_id="9d3c0a51-7b2e-4f61-8c4d-2e5f6a7b8c90")
    other.prompt("Rename load to read_rows")
    other.edit("src/notes/importer.py")  # changed, with nothing said of it
    await project.capture(other.save(tmp_path / "two.jsonl"))
    [merged] = [e for e in await project.by_kind("codebase_discovery")
                if e.name == "src/notes/importer.py"]
    assert merged.data["description"] == rich.data["description"]
    assert merged.data["notes"] == rich.data["notes"]
    assert merged.data["sessions"] == [rich.data["sessions"][0], other.session_id]


async def test_a_bad_lesson_blocks_none_of_the_others(project: Project, tmp_path: Path) -> None:
    t = Transcript(str(project.folder))
    t.prompt("Look into the save path")
    t.say("Gotcha: a NUL \x00 in a lesson\nPattern: retry a save once on EBUSY\n"
          "Discovery: src/notes/store.py: saves notes atomically")
    await project.capture(t.save(tmp_path / "s.jsonl"))
    kept = {(e.kind, e.name) for e in await project.memories() if e.source == "claude_code"}
    assert kept == {("gotcha", "a NUL in a lesson"), ("pattern", "retry a save once on EBUSY"),
                    ("codebase_discovery", "src/notes/store.py")}


async def test_secrets_are_redacted_before_anything_is_kept(project: Project,
                                                            tmp_path: Path) -> None:
    t = Transcript(str(project.folder))
    t.prompt(f"Deploy with the key {SECRETS['openai key']}")
    t.bash(f"curl -H 'Authorization: token {SECRETS['github token']}' https://x",
           f"Error: 401 bad credentials for {SECRETS['aws key']}", code=22)
    t.edit("deploy.sh", said=f"Let me put {SECRETS['slack token']} into the deploy script.")
    t.bash(f"curl -H 'Authorization: token {SECRETS['github token']}' https://x", "ok")
    path = t.save(tmp_path / "s.jsonl")
    await project.capture(path)
    kept = b"".join(e.body.encode() + e.name.encode() for e in await project.memories())
    kept += (project.home / cursor_name(path)).read_bytes()
    assert b"[REDACTED:" in kept
    for secret in SECRETS.values():
        assert secret.encode() not in kept


async def test_a_subagents_transcript_gives_discoveries_not_a_session(project: Project,
                                                                      tmp_path: Path) -> None:
    t = Transcript(str(project.folder), sidechain=True)
    t.prompt("Find where notes are saved")
    t.read("src/notes/store.py")
    t.say("Notes are saved by `store.py`, which writes a temp file and renames it over the "
          "original.")
    await project.capture(t.save(tmp_path / "s" / "subagents" / "agent-a1b2c3.jsonl"))
    assert {e.kind for e in await project.memories()} == {"codebase_discovery"}


async def test_compaction_and_damaged_lines(project: Project, tmp_path: Path) -> None:
    t = Transcript(str(project.folder))
    t.prompt("Carry on with the importer")
    t.compact(SUMMARY)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"{not json\n" + t.data() + b'\xff\xfe\n{"type": "user", "mess')
    report = await project.capture(path, final=True)
    assert report.damaged == 3  # the broken line, the one of bytes, the cut last one
    names = {e.name for e in await project.by_kind("codebase_discovery")}
    assert names == {"src/notes/importer.py", "tests/test_importer.py"}
    [insight] = await project.by_kind("session_insight")
    assert insight.data["compactions"] == 1


async def test_the_graph_links_the_session_to_what_it_touched(project: Project,
                                                              tmp_path: Path) -> None:
    await project.capture(working_session(str(project.folder)).save(tmp_path / "s.jsonl"))
    named = {(entity.label, entity.name) for episode in await project.memories()
             for entity in extract(episode).entities}
    assert ("File", "src/notes/importer.py") in named
    assert ("Task", f"claude-session:{working_session('/').session_id}") in named
    assert any(label == "Command" and "pytest" in name for label, name in named)
    [outcome] = await project.by_kind("task_outcome")
    facts = extract(outcome).facts
    assert any("src/notes/importer.py" in fact.fact for fact in facts)


def test_the_cursor_file_is_json_in_the_home(tmp_path: Path) -> None:
    where = tmp_path / ".dualmem" / cursor_name(tmp_path / "s.jsonl")
    assert where.parent == tmp_path / ".dualmem" / "capture" and where.suffix == ".json"
    assert orjson.dumps(str(where))


async def test_an_error_in_colours_keeps_its_words(project: Project, tmp_path: Path) -> None:
    t = Transcript(str(project.folder))
    t.prompt("Draw the cats")
    t.bash("python make_cats.py", 'Traceback (most recent call last):\n  File "make_cats.py", '
           "line 215, in draw_cat\n\x1b[1;35mKeyError\x1b[0m: \x1b[35m'inner_ear_color'\x1b[0m",
           code=1)
    t.edit("make_cats.py")
    t.bash("python make_cats.py", "drew 12 cats")
    await project.capture(t.save(tmp_path / "s.jsonl"))
    [gotcha] = await project.by_kind("gotcha")
    assert gotcha.data["error"] == "KeyError: 'inner_ear_color'"


async def test_ten_thousand_lessons_are_capped_and_said(project: Project, tmp_path: Path) -> None:
    # 10k labelled lines took 72 s on every Stop (50 s when all were stored): the Stop's
    # timeout is 30 s. A session keeps at most MAX_LESSONS, says how many it left out, and a
    # later Stop reads none of them again.
    t = Transcript(str(project.folder))
    t.prompt("List every gotcha you know")
    t.say("\n".join(f"Gotcha: trap number {n}" for n in range(10_000)))
    path = t.save(tmp_path / "s.jsonl")
    report = await project.capture(path)
    assert report.lessons_over == 10_000 - MAX_LESSONS
    assert report.kept.kinds["gotcha"] == MAX_LESSONS
    assert len(await project.by_kind("gotcha")) == MAX_LESSONS
    again = await project.capture(path)
    assert again.lines == 0 and not again.kept


async def test_a_file_is_spoken_of_by_its_whole_name(project: Project, tmp_path: Path) -> None:
    t = Transcript(str(project.folder))
    t.prompt("Look at the loaders")
    t.read("src/a.py")
    t.read("src/data.py")
    t.say("The loader in data.py reads every row twice, which is why imports are slow.")
    await project.capture(t.save(tmp_path / "s.jsonl"))
    assert {e.name for e in await project.by_kind("codebase_discovery")} == {"src/data.py"}


async def test_a_transcript_from_another_machine_keeps_its_files(project: Project,
                                                                 tmp_path: Path) -> None:
    # Replayed elsewhere (a colleague's session, a backfill of a moved project): its paths are
    # under the folder it ran in, not this project's.
    t = Transcript("/Users/someone/code/notes-app")
    t.prompt("Fix the importer")
    t.edit("src/notes/importer.py")
    t.edit("/etc/hosts")  # outside both: not the project's
    await project.capture(t.save(tmp_path / "s.jsonl"))
    assert {e.name for e in await project.by_kind("codebase_discovery")} == {
        "src/notes/importer.py"}
