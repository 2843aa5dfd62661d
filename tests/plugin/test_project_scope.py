"""One project scope and a command line fit for hooks: the home is found like ``.git``, commands
default to the project's group, reading never creates a home, and every option says what it
takes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import orjson
import pytest

from memory.cli import COMMANDS, build_parser, main
from memory.context import TASK_TYPES
from memory.store.config import Config
from plugin.processes import dualmem
from seeds import builtin_knowledge


def run_json(*argv: str, cwd: Path) -> Any:
    done = dualmem("--backend", "file", *argv, "--json", cwd=cwd)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)


def test_the_home_is_the_nearest_dualmem_folder_up_the_tree(tmp_path: Path) -> None:
    project = tmp_path / "app"
    deeper = project / "src" / "pkg"
    deeper.mkdir(parents=True)
    home = run_json("init", cwd=project)["home"]
    assert home == str(project / ".dualmem")
    run_json("add", "--kind", "gotcha", "--name", "n", "--body", "zebra stripes", cwd=deeper)
    found = run_json("search", "zebra", cwd=deeper)["hits"]
    assert len(found) == 1 and found[0]["episode"]["group_id"] == run_json(
        "init", cwd=deeper)["project_id"]  # init from inside reports the project's home
    assert not (deeper / ".dualmem").exists() and not (project / "src" / ".dualmem").exists()


def test_command_line_then_environment_then_discovery(tmp_path: Path) -> None:
    found, from_env, given = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    (found / ".dualmem").mkdir(parents=True)
    inner = found / "inner"
    inner.mkdir()
    assert Config.from_env({}, cwd=inner).home == found / ".dualmem"
    assert Config.from_env({"DUALMEM_HOME": str(from_env)}, cwd=inner).home == from_env
    assert Config.from_env({"DUALMEM_HOME": str(from_env)}, home=given, cwd=inner).home == given
    assert Config.from_env({}, cwd=tmp_path).home == tmp_path / ".dualmem"  # where init makes it


@pytest.mark.parametrize("argv", [
    ["search", "anything"], ["list"], ["get", "some-id"], ["delete", "some-id"], ["status"],
    ["export", "out.jsonl"], ["export", "--markdown", "md"], ["context", "--task", "x"],
    ["session", "history"], ["turns", "latest", "--feature", "F"], ["migrate"],
    ["migrate", "--dry-run"], ["reembed"],
])
def test_reading_a_home_that_is_not_there_fails_and_creates_nothing(
    tmp_path: Path, argv: list[str]
) -> None:
    typo = tmp_path / "hoem"
    done = dualmem("--home", str(typo), "--backend", "file", *argv, "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert orjson.loads(done.stdout)["error"]["type"] == "HomeNotFound"
    err = done.stderr.decode()
    assert err.count("\n") == 1 and "dualmem init" in err and str(typo) in err
    assert not typo.exists() and not (tmp_path / ".dualmem").exists()


def test_memories_added_without_a_group_reach_the_context(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def cli(*argv: str) -> Any:
        assert main(["--home", str(tmp_path / "home"), "--backend", "file", *argv, "--json"]) == 0
        return orjson.loads(capsys.readouterr().out)

    project = cli("init")["project_id"]
    added = cli("add", "--kind", "gotcha", "--name", "Kuzu lock",
                "--body", "Only one process may open the graph read-write")
    cli("add", "--group", "shared-notes", "--kind", "pattern", "--name", "Backoff",
        "--body", "Retry graph opening with exponential backoff")
    assert cli("get", added["id"])["episode"]["group_id"] == project
    assert [e["name"] for e in cli("list")["episodes"]] == ["Kuzu lock"]
    assert cli("list", "--all-groups")["count"] == 2
    task = ["context", "--task", "Open the graph read-write with retries", "--complexity", "3"]
    alone = cli(*task)["markdown"]
    assert "Only one process may open the graph" in alone and "backoff" not in alone
    assert "exponential backoff" in cli(*task, "--group", "shared-notes")["markdown"]


@pytest.mark.parametrize(("argv", "fragment"), [
    (["context", "--task", "x", "--type", "bugfixx"], "choose from 'implementation'"),
    (["context", "--task", "x", "--phase", "deploy"], "choose from 'load'"),
    (["--backend", "cloud", "list"], "choose from 'auto', 'graph', 'file'"),
    (["hook", "prompt", "--limit", "many"], "invalid int value"),
])
def test_enumerations_name_their_allowed_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    code = main(["--home", str(tmp_path), *argv])
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1
    assert code == (0 if argv[0] == "hook" else 2)


def test_every_task_type_the_knowledge_names_is_accepted() -> None:
    knowledge = builtin_knowledge()
    named = {gate.task_type for gate in knowledge.gates} | set(knowledge.task_type_aliases)
    assert named <= set(TASK_TYPES)
    assert main(["--home", "/nonexistent", "context", "--task", "x", "--type", "bugfix",
                 "--turn", "1"]) == 2  # --type bugfix parsed; --turn without --autobuild is not


def test_a_malformed_turn_file_is_one_line_per_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "turn.json"
    bad.write_bytes(orjson.dumps({"turn": -1, "coach_decision": "maybe", "extra": 1}))
    assert main(["--home", str(tmp_path / "home"), "turns", "record", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 400
    problems = err.split("not a turn state: ")[1].strip().split("; ")
    assert [p.split(":")[0] for p in problems] == [
        "feature_id", "task_id", "turn", "coach_decision", "extra"]


def _options(parser: argparse.ArgumentParser, name: str) -> list[argparse.Action]:
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(commands.choices[name]._actions)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_has_help(name: str) -> None:
    parser = build_parser(name)
    for action in [*parser._actions, *_options(parser, name)]:
        if isinstance(action, argparse._SubParsersAction):
            continue
        assert action.help, f"{name}: {action.option_strings or action.dest} has no help"
