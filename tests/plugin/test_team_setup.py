"""A team's setup comes from git: what ``init`` makes git ignore, the settings ``config set``
keeps in the home (never a password), and a clone that joins with ``init`` alone."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
import pytest

from memory.store.config import Config
from memory.store.project import read_project_id
from plugin.processes import dualmem

URL = "redis+unix:///nonexistent/falkor.sock?graph=team"


def git(folder: Path, *argv: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv],
                          cwd=folder, capture_output=True, check=True)
    return done.stdout.decode()


def ok(folder: Path, *argv: str) -> str:
    done = dualmem(*argv, cwd=folder)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode() + done.stderr.decode()


def test_a_clone_joins_with_init_and_nothing_derived_or_secret_is_committed(
        tmp_path: Path) -> None:
    first = tmp_path / "first"
    first.mkdir()
    git(first, "init", "-q")
    ok(first, "init")
    said = ok(first, "config", "set", "graph-url", URL + "&password=s3cr%2Ft%23x")
    assert "s3cr" not in said
    ok(first, "config", "set", "embedder", "nomic-embed-text@http://localhost:11434/v1")
    # Derived files of every kind: the journal's index and lock, an embedded graph, a copy of
    # a server's memories (the server does not answer: the write waits in the journal).
    ok(first, "--graph-engine", "kuzu", "add", "--kind", "gotcha", "--name", "g",
       "--body", "kept in the journal")
    ok(first, "--embedder", "", "search", "journal")
    git(first, "add", "-A")
    git(first, "commit", "-qm", "memory")
    committed = set(git(first, "ls-files").split())
    assert {".dualmem/.gitignore", ".dualmem/project.json", ".dualmem/config.json"} <= committed
    others = committed - {".dualmem/.gitignore", ".dualmem/project.json", ".dualmem/config.json"}
    assert others and all(name.startswith((".dualmem/files/episodes/", ".dualmem/files/views/"))
                          for name in others)
    assert (first / ".dualmem" / "graph").is_dir()
    assert (first / ".dualmem" / "graph-password").stat().st_mode & 0o077 == 0
    assert b"s3cr" not in (first / ".dualmem" / "config.json").read_bytes()

    second = tmp_path / "second"
    git(tmp_path, "clone", "-q", str(first), str(second))
    # A clone is the same project: no note that its home was moved or copied, and init
    # leaves the committed project.json as git gave it (the first clone's place in it).
    assert "note:" not in ok(second, "status")
    assert "note:" not in ok(second, "init")
    assert git(second, "status", "--porcelain", ".dualmem") == ""
    home = second / ".dualmem"
    assert read_project_id(home / "project.json") == read_project_id(
        first / ".dualmem" / "project.json")
    config = Config.from_env({}, cwd=second)
    assert config.graph_url is not None and config.graph_url.graph == "team"
    assert config.graph_url.password is None  # the password is the first machine's own
    assert config.embedder is not None and config.embedder.model == "nomic-embed-text"
    given = Config.from_env({"DUALMEM_GRAPH_PASSWORD": "p"}, cwd=second)
    assert given.graph_url is not None and given.graph_url.password == "p"
    own = Config.from_env({}, cwd=first)
    assert own.graph_url is not None and own.graph_url.password == "s3cr/t#x"


def test_config_show_and_bad_settings(tmp_path: Path) -> None:
    ok(tmp_path, "init")
    ok(tmp_path, "config", "set", "graph-url", URL)
    shown = orjson.loads(ok(tmp_path, "config", "show", "--json"))
    assert shown["settings"] == {"graph-url": URL}
    done = dualmem("config", "set", "graph-url", "http://nowhere", cwd=tmp_path)
    assert done.returncode == 1 and len(done.stderr.decode().strip().splitlines()) == 1
    (tmp_path / ".dualmem" / "config.json").write_text('{"graph_url": 3}')
    done = dualmem("search", "x", cwd=tmp_path)
    assert done.returncode == 1 and b"not a dualmem settings file" in done.stderr


@pytest.mark.parametrize("name", ["config.json", "graph-password"])
def test_a_setting_file_that_is_a_link_is_refused(tmp_path: Path, name: str) -> None:
    ok(tmp_path, "init")
    ok(tmp_path, "config", "set", "graph-url", URL)
    outside = tmp_path / "outside"
    outside.write_text('{"graph_url": "falkor://elsewhere/x"}')
    target = tmp_path / ".dualmem" / name
    target.unlink(missing_ok=True)
    target.symlink_to(outside)
    done = dualmem("search", "x", cwd=tmp_path)
    assert done.returncode == 1 and b"symbolic link" in done.stderr
