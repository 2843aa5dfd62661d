"""A check's pattern that most output cannot match is compiled only for text holding the words
each of its matches holds: what is found so is what the pattern alone finds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory.capture import checks

PIECES = st.sampled_from(["Exit code ", "Error: ", "ERROR task failed", "Finished in ", "$ ",
                          "[lint:go]", "[", "]", "] ", "E", "rror", "Exit", "code", "1", "12",
                          "x", " ", "  ", "\n", "\r", "\t", "\x0b", "\x85", "$", "ok", ""])
TEXT = st.lists(PIECES, max_size=12).map("".join) | st.text(max_size=30)


@given(TEXT)
def test_an_exit_status_line_is_found_as_its_pattern_finds_it(line: str) -> None:
    assert checks._exit_line(line) == bool(checks._EXIT_LINE().match(line))


@given(TEXT)
def test_a_task_runners_own_line_is_found_as_its_pattern_finds_it(line: str) -> None:
    assert checks._runners_own(line) == bool(checks._RUNNERS_OWN().match(line))


@given(TEXT)
def test_a_failed_task_is_named_as_its_pattern_names_it(output: str) -> None:
    assert checks._failed_tasks(output) == checks._TASK_FAILED().findall(output)
