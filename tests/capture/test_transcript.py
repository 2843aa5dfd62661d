"""The parser on lines shaped as Claude Code writes them: what is a prompt and what only looks
like one, tool calls with their results, compactions, subagents, damaged and non-UTF-8 lines."""

from __future__ import annotations

import json

import orjson
from hypothesis import given
from hypothesis import strategies as st

from backends.json_read import loads
from capture.shapes import SUMMARY, Transcript
from memory.capture.transcript import (
    Compaction,
    Prompt,
    Reply,
    ToolResult,
    ToolUse,
    parse_line,
)


def _events(transcript: Transcript) -> list[object]:
    found: list[object] = []
    for line in transcript.data().splitlines():
        entry = parse_line(line)
        assert entry is not None
        found += entry.events
    return found


def test_only_what_the_user_typed_is_a_prompt() -> None:
    t = Transcript("/p")
    t.command("clear")  # wrapper, local output, meta caveat
    t.prompt("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>")
    t.prompt("[Request interrupted by user for tool use]")
    t.prompt("Add paging to the notes list")
    t.compact(SUMMARY)
    t.prompt("This session is being continued from a previous conversation that ran out of "
             "context. (an older release, without isCompactSummary)")
    events = _events(t)
    assert [e for e in events if isinstance(e, Prompt)] == [Prompt("Add paging to the notes list")]
    compactions = [e for e in events if isinstance(e, Compaction)]
    assert len(compactions) == 2 and "Files and Code Sections" in compactions[0].text


def test_tool_calls_and_their_results() -> None:
    t = Transcript("/p")
    t.bash("pytest -q", "E   assert 1 == 2\n1 failed", code=1, said="Running the tests.")
    t.edit("src/a.py", said="Fixing it:")
    events = _events(t)
    assert events[0] == Reply("Running the tests.")
    assert events[1] == ToolUse("toolu_0001", "Bash", {"command": "pytest -q",
                                                       "description": "run"})
    result = events[2]
    assert isinstance(result, ToolResult) and result.is_error
    assert result.text.startswith("Exit code 1\n") and result.tool_use_id == "toolu_0001"
    assert result.result == "Error: Exit code 1\nE   assert 1 == 2\n1 failed"
    edited = events[5]
    assert isinstance(edited, ToolResult) and not edited.is_error
    assert edited.result["filePath"] == "/p/src/a.py"


def test_a_subagents_lines_say_so() -> None:
    t = Transcript("/p", sidechain=True)
    t.prompt("Find where notes are saved")
    entry = parse_line(t.data().splitlines()[0])
    assert entry is not None and entry.meta.sidechain and entry.meta.session_id == t.session_id
    assert entry.meta.uuid and entry.meta.time and entry.meta.cwd == "/p"


def test_damaged_lines_are_none_and_nothing_raises() -> None:
    for raw in (b'{"type": "user", "message": {"role": "us', b"[1, 2]", b"", b"\xff\xfe{",
                b'{"type": "assistant", "message": {"content": [1, null, {"type": "text"}]}}',
                b'{"type": "user", "message": "not a message", "toolUseResult": 3}'):
        entry = parse_line(raw)
        assert entry is None or entry.events == []


def test_non_utf8_bytes_are_read_with_replacement() -> None:
    line = orjson.dumps({"type": "user", "message": {"role": "user", "content": "caf_"}})
    entry = parse_line(line.replace(b"caf_", b"caf\xe9 au lait"))
    assert entry is not None and entry.events == [Prompt("caf\ufffd au lait")]


def test_a_huge_output_keeps_its_end() -> None:
    t = Transcript("/p")
    t.bash("pytest", "x" * 200_000 + "\n3 failed, 1 passed")
    result = _events(t)[1]
    assert isinstance(result, ToolResult) and len(result.text) < 25_000
    assert result.text.endswith("3 failed, 1 passed")


# What a line may hold, spelled as any writer may spell it: numbers past 64 bits or a double's
# range, constants, surrogates escaped or raw (not UTF-8 then), control characters.
NUMBERS = st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
TEXT = st.text() | st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF))
VALUES = st.recursive(st.none() | st.booleans() | NUMBERS | TEXT, lambda inner: st.lists(
    inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=12)
SPELLED = st.sampled_from(["NaN", "-Infinity", "1e400", "-1.5e999", "1E5", "-0", "0.1e-400"])


@given(VALUES, st.booleans(), st.lists(SPELLED, max_size=2))
def test_a_few_lines_parse_as_orjson_parses_them(value: object, ascii_only: bool,
                                                  numbers: list[str]) -> None:
    text = json.dumps({"v": value, "n": 0}, ensure_ascii=ascii_only, allow_nan=False)
    text = text.replace('"n": 0', f'"n": [{", ".join(numbers)}]')
    for raw in (text.encode("utf-8", "surrogatepass"), text):
        try:
            expected = orjson.loads(raw)
        except orjson.JSONDecodeError:
            try:
                loads(raw)
            except ValueError:
                continue
            raise AssertionError(f"orjson refuses {raw!r}") from None
        assert loads(raw) == expected  # and a lean parse_line is the same too
        assert parse_line(text.encode("utf-8", "surrogatepass"), lean=True) == parse_line(
            text.encode("utf-8", "surrogatepass"))
