"""Where the graph lives, as configured: server URLs and embedded engines, and every bad one
refused with ``InvalidGraphAddress`` (a one-line message on the command line)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.errors import InvalidGraphAddress
from backends.graph.address import ServerAddress, check_engine, parse_server_url
from memory.cli import main
from memory.store.config import Config, ConfigError


@pytest.mark.parametrize(("url", "expected"), [
    ("falkor://localhost:6379/team", ServerAddress("team", host="localhost", port=6379)),
    ("falkor://db.example:7000", ServerAddress("dualmem", host="db.example", port=7000)),
    ("redis://10.0.0.5/g-1", ServerAddress("g-1", host="10.0.0.5", port=6379)),
    ("falkordb://[::1]:6380/x", ServerAddress("x", host="::1", port=6380)),
    ("falkor://:s3cret@h:1/g", ServerAddress("g", host="h", port=1, password="s3cret")),
    ("falkor://ann:pw@h/g", ServerAddress("g", host="h", port=6379, username="ann",
                                          password="pw")),
    ("redis+unix:///run/falkor.sock", ServerAddress("dualmem", socket="/run/falkor.sock")),
    ("redis+unix:///tmp/a%20b.sock?graph=team", ServerAddress("team", socket="/tmp/a b.sock")),
    ("unix:///s.sock?graph=t&password=p", ServerAddress("t", socket="/s.sock", password="p")),
])
def test_server_urls(url: str, expected: ServerAddress) -> None:
    assert parse_server_url(url) == expected


@pytest.mark.parametrize(("url", "says"), [
    ("http://localhost:6379/g", "expected falkor://"),
    ("localhost:6379", "expected falkor://"),
    ("falkor:///g", "names no host"),
    ("falkor://h:99999/g", "out of range"),
    ("falkor://h:port/g", "graph URL"),
    ("falkor://h/a/b", "graph name"),
    ("falkor://h/bad.name", "graph name"),
    ("falkor://h/" + "x" * 129, "graph name"),
    ("redis+unix://relative.sock", "absolute path"),
    ("redis+unix:///dir/", "absolute path"),
    ("redis+unix:///s.sock?graph=", "graph name"),
    ("redis+unix:///s.sock?graph=a&graph=b", "given twice"),
    ("redis+unix:///s.sock?db=0", "unknown option 'db'"),
])
def test_bad_urls_are_named(url: str, says: str) -> None:
    with pytest.raises(InvalidGraphAddress, match=says):
        parse_server_url(url)


def test_a_password_never_appears_in_a_message() -> None:
    with pytest.raises(InvalidGraphAddress) as caught:
        parse_server_url("falkor://ann:hunter2@h/bad.name")
    assert "hunter2" not in str(caught.value)
    with pytest.raises(InvalidGraphAddress) as caught:
        parse_server_url("redis+unix:///s?password=hunter2&x=1")
    assert "hunter2" not in str(caught.value)
    assert "hunter2" not in str(parse_server_url("falkor://:hunter2@h/g"))
    assert "hunter2" not in repr(parse_server_url("falkor://:hunter2@h/g"))


@pytest.mark.parametrize("url", [
    "falkor://:SE/CRET@host/g", "falkor://:SE#CRET@host/g", "falkor://:SE?CRET@host/g",
    "falkor://ann:SE@CRET@host/g", "falkor://h/g?password=SE#CRET",
    "redis+unix://:SE/CRET@/run/s.sock",
])
def test_a_password_with_unencoded_separators_is_refused_unprinted(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InvalidGraphAddress, match="percent-encoded") as caught:
        parse_server_url(url)
    assert "SE" not in str(caught.value) and "CRET" not in str(caught.value)
    code = main(["--home", str(tmp_path), "--graph-url", url, "status"])
    err = capsys.readouterr().err
    assert code == 1 and len(err.splitlines()) == 1
    assert "SE" not in err and "CRET" not in err


# Two tokens no other part of the URLs holds, split by what a URL reads as separators.
passwords = st.lists(st.sampled_from(["QQ", "ZZ", "/", "?", "#", "@", ":", "=", "%", "&"]),
                     min_size=1, max_size=8).map("".join)


@given(password=passwords, form=st.sampled_from(["falkor://:{}@h/g", "falkor://ann:{}@h:1/g",
                                                 "redis+unix://:{}@/s.sock?graph=g",
                                                 "falkor://h/g?password={}"]))
def test_no_part_of_any_password_is_ever_printed(password: str, form: str) -> None:
    if form.endswith("password={}"):
        password = password.replace("&", "")  # there & separates options, by definition
    try:
        shown = str(parse_server_url(form.format(password)))
    except InvalidGraphAddress as exc:
        shown = str(exc)
    assert "QQ" not in shown and "ZZ" not in shown


names = st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True)


@given(graph=names, host=st.sampled_from(["localhost", "127.0.0.1", "db.example", "::1"]),
       port=st.integers(1, 65535))
def test_an_address_reads_back_from_its_url(graph: str, host: str, port: int) -> None:
    address = ServerAddress(graph, host=host, port=port)
    assert parse_server_url(str(address)) == address


@given(graph=names, path=st.from_regex(r"(/[a-z0-9._-]{1,8}){1,4}", fullmatch=True))
def test_a_socket_address_reads_back_from_its_url(graph: str, path: str) -> None:
    address = ServerAddress(graph, socket=path)
    assert parse_server_url(str(address)) == address


def test_engines() -> None:
    assert check_engine("kuzu") == "kuzu"
    assert check_engine("ladybug") == "ladybug"
    with pytest.raises(InvalidGraphAddress, match="kuzu, ladybug"):
        check_engine("neo4j")


def test_config_reads_the_graph_settings(tmp_path: Path) -> None:
    plain = Config.from_env({}, home=tmp_path)
    assert (plain.graph_url, plain.graph_engine, plain.graph_dir) == (
        None, "kuzu", tmp_path / "graph")
    ladybug = Config.from_env({"DUALMEM_GRAPH_ENGINE": "ladybug"}, home=tmp_path)
    assert ladybug.graph_dir == tmp_path / "graph-ladybug"
    server = Config.from_env({"DUALMEM_GRAPH_URL": "falkor://h:1/g"}, home=tmp_path)
    assert server.graph_url == ServerAddress("g", host="h", port=1)
    chosen = Config.from_env({"DUALMEM_GRAPH_URL": "falkor://h:1/g"}, home=tmp_path,
                             graph_url="redis+unix:///s")
    assert chosen.graph_url == ServerAddress(socket="/s")
    with pytest.raises(InvalidGraphAddress):
        Config.from_env({"DUALMEM_GRAPH_URL": "nonsense"}, home=tmp_path)
    with pytest.raises(InvalidGraphAddress):
        Config.from_env({"DUALMEM_GRAPH_ENGINE": "sqlite"}, home=tmp_path)
    with pytest.raises(ConfigError, match="not both"):
        Config.from_env({"DUALMEM_GRAPH_URL": "falkor://h/g",
                         "DUALMEM_GRAPH_ENGINE": "kuzu"}, home=tmp_path)


def test_the_command_line_says_what_is_wrong_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--home", str(tmp_path), "--graph-url", "falkor://h:port/g", "status"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1
    assert err.startswith("dualmem: error: graph URL 'falkor://h:port/g'")
    code = main(["--home", str(tmp_path), "--graph-url", "falkor://h/g", "--graph-engine",
                 "kuzu", "status"])
    assert code == 2 and "not allowed with argument" in capsys.readouterr().err
