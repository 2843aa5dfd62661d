"""Finding the command of a line from the global options alone (``memory.cli._command_in``)
gives what the whole parser gives, for any line either can read."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory import cli
from memory.cli import COMMANDS, _command_in, build_parser
from memory.cli.base import UsageError

words = st.sampled_from([
    *COMMANDS, "--home", "--home=h", "--ho", "--backend", "--backend=file", "file", "auto",
    "--embedder", "--llm", "m@http://x", "--json", "--help", "-h", "--limit", "3", "query", "--",
    "--frob", "-x", "prompt",
])


@given(st.lists(words, max_size=7))
def test_the_command_found_is_the_whole_parsers(argv: list[str]) -> None:
    try:
        whole = build_parser().parse_known_args(argv)[0].command
    except (UsageError, SystemExit):
        whole = None  # the whole parser cannot read it: the line fails either way
    try:
        found = _command_in(argv)
    except (UsageError, SystemExit):
        found = None
    if whole is not None:
        assert found == whole


@pytest.mark.parametrize("option", [["--graph-url", "falkor://127.0.0.1:6379/team"],
                                    ["--graph-engine", "kuzu"], ["--home", "h"]])
def test_a_global_option_and_its_value_need_not_the_whole_parser(
    option: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # One the global options alone did not know took its value for the command: a team's
    # search (``--graph-url URL search``) built every command's parser.
    def whole(name: str | None = None) -> argparse.ArgumentParser:
        raise AssertionError(f"the whole parser was built for {option}")

    monkeypatch.setattr(cli, "build_parser", whole)
    assert _command_in([*option, "search", "query"]) == "search"
