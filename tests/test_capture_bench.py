"""The capture bench measures what it claims, end to end through the real ``dualmem`` CLI, on a
committed real transcript: cut points are turn ends, edited files are the session's, a label is
found in a kept memory, and a second Stop is checked."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from bench import capture_quality as bench

ENTIRE = bench.TRANSCRIPTS / "entire-cli"
FIRST = "8c816805-24e2-4871-ac94-e97ce23993c1"
"""One prompt, two files edited."""
FOURTH = "768de5d6-9fad-475b-8a4f-dfa7ddc01bb0"
"""Five prompts: a failing test fixed, then the tests tidied."""


def _session(session_id: str) -> bench.Session:
    project = bench.load_project(ENTIRE)
    return next(s for s in project.sessions if s.id == session_id)


def test_every_project_lists_its_sessions_in_time_order_with_labels_of_known_kinds() -> None:
    for project in bench.projects():
        assert len(project.sessions) >= 5
        for session in project.sessions:
            assert session.transcript.is_file() and session.labels
            assert {label.kind for label in session.labels} <= set(bench.KINDS)
        ids = [label.id for s in project.sessions for label in s.labels]
        assert len(ids) == len(set(ids))


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _strings(item)]


def test_every_label_can_be_found_in_what_its_session_wrote() -> None:
    """Labels ask only for what the transcript holds: a capture that keeps the right words of
    its own session can find them all."""
    for project in bench.projects():
        for session in project.sessions:
            said = "\n".join(text for line in session.transcript.read_bytes().splitlines()
                             for text in _strings(json.loads(line))).casefold()
            for label in session.labels:
                assert label.found_in(said), (project.name, label.id)


def test_stops_are_cut_at_turn_ends_and_at_the_end_and_edits_are_the_sessions() -> None:
    lines = _session(FOURTH).transcript.read_bytes().splitlines(keepends=True)
    cuts = bench.cut_points(lines, 3)
    assert len(cuts) == 4 and cuts[-1] == len(lines) and cuts == sorted(cuts)
    for cut in cuts[:-1]:  # the next line is a prompt a person typed, not the first
        assert bench._is_prompt(json.loads(lines[cut]))
    assert len(bench.cut_points(lines, 10)) == 5  # four turns ended before the last prompt
    lines = _session(FIRST).transcript.read_bytes().splitlines(keepends=True)
    assert bench.cut_points(lines, 5) == [len(lines)]  # one prompt, one turn
    folder, edited = bench.edited_files(lines)
    assert folder == "/Users/paul/src/entireio/cli"
    assert edited == {"cmd/entire/cli/filter/filter.go", "cmd/entire/cli/settings/settings.go"}


def test_a_label_needs_every_term_and_any_spelling_of_each() -> None:
    label = bench.Label("l", "decision", (("gitleaks-filter",), ("absolute path", "full path")))
    assert label.found_in(bench.text_of({"name": "Hooks", "body": "Use the FULL PATH to "
                                         "gitleaks-filter".casefold()}))
    assert not label.found_in(bench.text_of({"name": "gitleaks-filter", "body": "a filter"}))


def _with_a_lesson(tmp_path: Path) -> bench.Session:
    """The fourth session, with one more reply at its end that labels a gotcha the way today's
    Stop keeps it."""
    session = _session(FOURTH)
    lines = bench.transcript_lines(session)
    last = json.loads(next(line for line in reversed(lines)
                           if json.loads(line).get("type") == "assistant"))
    last["uuid"] = "00000000-0000-4000-8000-000000000001"
    last["message"]["content"] = [{"type": "text", "text": (
        "Gotcha: bytes(...) is the bytes package, not a conversion: write []byte(...)")}]
    copy = tmp_path / f"{FOURTH}.jsonl"
    copy.write_bytes(b"".join(lines) + json.dumps(last).encode())  # no newline, as copies have it
    return replace(session, transcript=copy)


def test_the_bench_replays_a_real_session_and_scores_what_stop_kept(tmp_path: Path) -> None:
    session = _with_a_lesson(tmp_path)
    project = bench.Project("one", (session,))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    result = bench.measure(bench.Dualmem.at(None), project, scratch, cuts=1, backend="file")
    (outcome,) = result.sessions
    lines = bench.transcript_lines(session, scratch / "project")
    assert lines[-1].endswith(b"\n")
    assert len(lines) == len(session.transcript.read_bytes().splitlines())
    assert not any(b"/Users/paul/" in line for line in lines)
    assert bench.edited_files(lines) == (str(scratch / "project"), {"redact/redact_test.go"})
    assert outcome.stops == len(bench.cut_points(lines, 1)) == 2
    assert len(result.seconds) == outcome.stops + 1 and not result.failures
    assert outcome.found["s4-bytes"] and not outcome.found["s4-slices"]
    assert outcome.prompted == {"s4-task", "s4-literal", "s4-redact-test"}  # what was asked
    gotchas = [m for m in outcome.kept if m["kind"] == "gotcha"]
    assert any("[]byte(" in m["body"] for m in gotchas)
    assert all(m["kind"] != "gotcha" for m in result.unmatched())
    assert result.second_stop_changes == 0 and result.one_stop_differs == []
    assert bench.rows(result)["sessions with a failure kept"] == "1/1 (100%)"
