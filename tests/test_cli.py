"""The command line, run in-process through ``main`` on real folders, plus real subprocesses."""

from __future__ import annotations

import io
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from backends.model import Episode, stable_id
from memory.cli import COMMANDS, main
from memory.cli.progress import Progress

REPO = Path(__file__).resolve().parents[1]
SURFACE = {"init", "add", "import", "export", "search", "get", "list", "delete", "status", "demo"}


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def doc(self) -> Any:
        """The one JSON document on stdout (fails if there is anything else)."""
        return orjson.loads(self.out)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def cli(home: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    def run(*argv: str, json: bool = True) -> Run:
        args = ["--home", str(home), "--backend", "file", *argv, *(["--json"] if json else [])]
        code = main(args)
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


def add(cli: Any, group: str = "proj", kind: str = "pattern", name: str = "Retry network calls",
        body: str = "Wrap flaky HTTP calls in a retry with exponential backoff.",
        *extra: str) -> dict[str, Any]:
    result = cli("add", "--group", group, "--kind", kind, "--name", name, "--body", body, *extra)
    assert result.code == 0, result.err
    return result.doc  # type: ignore[no-any-return]


def assert_error(result: Run, code: int, error_type: str, fragment: str) -> None:
    assert result.code == code
    assert result.err.count("\n") == 1 and result.err.startswith("dualmem: error: ")
    assert fragment in result.err
    assert result.doc == {"error": {"type": error_type, "message": result.err[16:].rstrip("\n")}}


def test_help_lists_the_whole_surface(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert set(COMMANDS) >= SURFACE
    for name in COMMANDS:
        assert name in out
    assert main(["add", "--help"]) == 0
    assert "--body-file" in capsys.readouterr().out


def test_init_creates_the_home_with_a_stable_project_id(cli: Any, home: Path) -> None:
    first = cli("init").doc
    assert first["created"] is True and first["layer"] == "file" and first["home"] == str(home)
    assert orjson.loads((home / "project.json").read_bytes()) == {
        "project_id": first["project_id"], "folder": str(home.parent)}
    second = cli("init").doc
    assert second["created"] is False and second["project_id"] == first["project_id"]
    assert "already initialised" in cli("init", json=False).out


def test_init_refuses_a_corrupt_project_file_and_leaves_it(cli: Any, home: Path) -> None:
    home.mkdir()
    (home / "project.json").write_bytes(b"{truncated")
    assert_error(cli("init"), 1, "StoreCorrupt", "project.json")
    assert (home / "project.json").read_bytes() == b"{truncated"


def test_add_search_get_list_delete(cli: Any) -> None:
    receipt = add(cli)
    assert set(receipt) == {"id", "layer", "location", "pending"} and receipt["layer"] == "file"
    other = add(cli, "proj", "gotcha", "Kuzu has one writer", "Only one process may write.")

    hits = cli("search", "retry netwrk", "--group", "proj").doc
    assert hits["query"] == "retry netwrk"
    assert [h["episode"]["id"] for h in hits["hits"]] == [receipt["id"]]
    top = hits["hits"][0]
    assert set(top) == {"episode", "score", "layer"} and 0 < top["score"] <= 1

    episode = cli("get", receipt["id"]).doc["episode"]
    assert episode["name"] == "Retry network calls" and episode["source"] == "cli"
    assert episode["group_id"] == "proj" and episode["kind"] == "pattern"

    listed = cli("list", "--group", "proj").doc
    assert listed["count"] == 2
    assert {e["id"] for e in listed["episodes"]} == {receipt["id"], other["id"]}
    assert cli("list", "--kind", "gotcha", "--all-groups").doc["count"] == 1
    assert cli("list", "--group", "elsewhere").doc == {"count": 0, "episodes": []}
    assert cli("list").doc == {"count": 0, "episodes": []}  # the project's group is another

    assert cli("delete", receipt["id"]).doc == {"id": receipt["id"], "deleted": True}
    assert_error(cli("get", receipt["id"]), 1, "UnknownId", receipt["id"])
    assert_error(cli("delete", receipt["id"]), 1, "UnknownId", "no memory with id")
    assert _count(cli) == 1
    # Every id is found before any is deleted: an unknown one deletes nothing.
    assert_error(cli("delete", other["id"], receipt["id"]), 1, "UnknownId", receipt["id"])
    assert _count(cli) == 1
    assert cli("delete", other["id"]).doc == {"id": other["id"], "deleted": True}
    assert _count(cli) == 0
    both = [add(cli)["id"], add(cli, "proj", "gotcha", "One writer", "Only one.")["id"]]
    assert cli("delete", *both).doc == {"ids": both, "deleted": True}


def test_filters_repeat_and_combine(cli: Any) -> None:
    for group, kind in [("a", "pattern"), ("b", "pattern"), ("b", "gotcha"), ("c", "pattern")]:
        add(cli, group, kind, f"{group} {kind}", "shared token zebra")
    assert cli("list", "--group", "a", "--group", "b").doc["count"] == 3
    assert cli("list", "--group", "b", "--kind", "pattern").doc["count"] == 1
    found = cli("search", "zebra", "--group", "a", "--group", "c", "--limit", "1").doc["hits"]
    assert len(found) == 1 and found[0]["episode"]["group_id"] in {"a", "c"}
    found = cli("search", "zebra", "--kind", "gotcha", "--all-groups").doc["hits"]
    assert found[0]["episode"]["group_id"] == "b"


def test_a_key_makes_adding_again_an_update(cli: Any) -> None:
    first = add(cli, "proj", "pattern", "Old", "old text", "--key", "K1")
    second = add(cli, "proj", "pattern", "New", "new text", "--key", "K1")
    assert first["id"] == second["id"] == stable_id("proj", "pattern", "K1")
    assert _count(cli) == 1
    assert cli("get", first["id"]).doc["episode"]["body"] == "new text"


def test_body_file_carries_structured_json(cli: Any, tmp_path: Path) -> None:
    body = orjson.dumps({"file": "src/app.py", "patterns": ["retry"], "note": "naïve ünïcode"})
    (tmp_path / "body.json").write_bytes(body)
    receipt = cli("add", "--group", "proj", "--kind", "codebase_discovery", "--name", "app.py",
                  "--body-file", str(tmp_path / "body.json"), "--source", "tester").doc
    episode = cli("get", receipt["id"]).doc["episode"]
    assert episode["body"] == body.decode() and episode["source"] == "tester"
    assert orjson.loads(episode["body"])["note"] == "naïve ünïcode"


def test_json_flag_before_or_after_the_command(cli: Any, home: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    add(cli)
    assert main(["--home", str(home), "--json", "list", "--group", "proj"]) == 0
    assert orjson.loads(capsys.readouterr().out)["count"] == 1
    assert main(["--home", str(home), "list", "--group", "proj", "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["count"] == 1


def test_human_output_is_concise(cli: Any) -> None:
    added = cli("add", "--kind", "pattern", "--name", "Retry calls",
                "--body", "retry with backoff", json=False)
    assert added.code == 0 and added.out.startswith("stored ") and "file layer" in added.out
    episode_id = added.out.split()[1]
    assert episode_id in cli("search", "backoff", json=False).out
    assert "no matches" in cli("search", "nothing-like-it", json=False).out
    got = cli("get", episode_id, json=False).out
    assert "name:" in got and got.rstrip().endswith("retry with backoff")
    assert cli("list", json=False).out.rstrip().endswith("1 episode(s)")
    assert "layer:  file" in cli("status", json=False).out
    assert cli("delete", episode_id, json=False).out.strip() == f"deleted {episode_id}"


def test_status_counts_per_group(cli: Any, home: Path) -> None:
    for number, group in enumerate(["a", "a", "b"]):
        add(cli, group, "pattern", "n", f"text {number}")
    status = cli("status").doc
    assert status == {"home": str(home), "layer": "file", "reason": status["reason"], "total": 3,
                      "groups": {"a": 2, "b": 1}, "problems": []}
    assert status["reason"]


def _count(cli: Any) -> int:
    return cli("list", "--all-groups").doc["count"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("group", ["a/b", "..", "", "x" * 129, "nul\x00"])
def test_bad_group_id_is_refused_and_nothing_written(cli: Any, home: Path, group: str) -> None:
    result = cli("add", "--group", group, "--kind", "pattern", "--name", "n", "--body", "b")
    assert_error(result, 1, "InvalidEpisode", "group")
    assert not home.exists()


def test_bad_group_filter_is_refused(cli: Any) -> None:
    add(cli)
    assert_error(cli("search", "x", "--group", "../etc"), 1, "InvalidEpisode", "group id")
    assert_error(cli("list", "--group", "a/b"), 1, "InvalidEpisode", "group id")


def test_missing_body_file(cli: Any, home: Path, tmp_path: Path) -> None:
    result = cli("add", "--group", "g", "--kind", "k", "--name", "n",
                 "--body-file", str(tmp_path / "absent.txt"))
    assert_error(result, 1, "FileArgumentError", "absent.txt")
    assert not home.exists()


def test_body_file_that_is_not_utf8(cli: Any, home: Path, tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    result = cli("add", "--group", "g", "--kind", "k", "--name", "n",
                 "--body-file", str(tmp_path / "latin1.txt"))
    assert_error(result, 1, "InvalidEpisode", "not valid UTF-8")
    assert not home.exists()


def test_oversize_body(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUALMEM_MAX_BODY_BYTES", "100")
    result = cli("add", "--group", "g", "--kind", "k", "--name", "n", "--body", "x" * 101)
    assert_error(result, 1, "InvalidEpisode", "over the limit")
    assert _count(cli) == 0
    add(cli, "g", "k", "n", "x" * 100)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["add", "--group", "g", "--kind", "k", "--body", "b"], "--name"),
        (["add", "--group", "g", "--kind", "k", "--name", "n"], "--body"),
        (["add", "--group", "g", "--kind", "k", "--name", "n", "--body", "b", "--body-file", "f"],
         "not allowed with"),
        (["search", "x", "--limit", "0"], "--limit"),
        (["frobnicate"], "invalid choice"),
        ([], "required"),
    ],
)
def test_usage_errors_exit_2(cli: Any, argv: list[str], fragment: str) -> None:
    assert_error(cli(*argv), 2, "UsageError", fragment)


def test_bad_backend_choice_in_the_environment(home: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DUALMEM_BACKEND", "cloud")
    assert main(["--home", str(home), "list", "--json"]) == 1
    assert orjson.loads(capsys.readouterr().out)["error"]["type"] == "ConfigError"


def _episode_lines() -> list[dict[str, Any]]:
    return [
        {"id": "ep-1", "group_id": "proj", "kind": "pattern", "name": "Retry", "body": "retry it",
         "created_at": "2025-01-02T03:04:05+00:00"},
        {"id": "ep-2", "group_id": "proj", "kind": "gotcha", "name": "Ünïcode ✓",
         "body": "line one\nline two ✓", "source": "migration",
         "created_at": "2025-01-02T03:04:06.123456+00:00",
         "valid_at": "2025-01-01T00:00:00+00:00", "invalid_at": "2025-06-01T00:00:00+00:00"},
        {"id": "ep-3", "group_id": "other", "kind": "codebase_discovery", "name": "app.py",
         "body": '{"file": "app.py", "purpose": "entry point"}',
         "created_at": "2025-01-02T05:00:00+02:00"},
    ]


def _write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def test_import_export_round_trip(cli: Any, tmp_path: Path, home: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    source = _write_jsonl(tmp_path / "in.jsonl", _episode_lines())
    assert cli("import", str(source)).doc == {"file": str(source), "imported": 3, "layer": "file"}
    add(cli, "proj", "pattern", "Added by hand", "text")
    first = tmp_path / "first.jsonl"
    assert cli("export", str(first)).doc == {"file": str(first), "exported": 4}

    rows = [orjson.loads(line) for line in first.read_bytes().splitlines()]
    expected = [Episode.parse(**row).model_dump(mode="json", exclude_none=True)
                for row in _episode_lines()]
    assert [row["id"] for row in rows] == ["ep-3", "ep-1", "ep-2", rows[3]["id"]]  # oldest first
    assert sorted(rows[:3], key=lambda row: row["id"]) == expected
    assert rows[0]["created_at"] == "2025-01-02T03:00:00Z"  # normalised to UTC
    assert "valid_at" not in rows[1] and rows[2]["invalid_at"] == "2025-06-01T00:00:00Z"

    copy = tmp_path / "copy"
    assert main(["--home", str(copy), "--backend", "file", "import", str(first)]) == 0
    second = tmp_path / "second.jsonl"
    assert main(["--home", str(copy), "--backend", "file", "export", str(second)]) == 0
    capsys.readouterr()
    assert second.read_bytes() == first.read_bytes()
    # Importing again updates in place: ids are kept, nothing is duplicated.
    assert cli("import", str(first)).doc["imported"] == 4
    assert _count(cli) == 4


@pytest.mark.parametrize(
    ("bad_line", "fragment"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"id": "x", "group_id": "a/b", "kind": "k", "name": "n", "body": "b"}', "group_id"),
        (b'{"id": "x", "group_id": "g", "kind": "k", "name": "n"}', "body"),
        (b'{"id": "x", "group_id": "g", "kind": "k", "name": "n", "body": "b", "extra": 1}',
         "extra"),
        (b'{"id": "x", "group_id": "g", "kind": "k", "name": "n", "body": "caf\xe9"}', "UTF-8"),
    ],
)
def test_a_bad_jsonl_line_names_its_number_and_nothing_is_imported(
    cli: Any, home: Path, tmp_path: Path, bad_line: bytes, fragment: str
) -> None:
    good = [orjson.dumps(row) for row in _episode_lines()]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join([good[0], b"", good[1], bad_line, good[2]]) + b"\n")
    result = cli("import", str(path))
    assert_error(result, 1, "InvalidEpisode", "bad.jsonl line 4")
    assert fragment in result.err
    assert not home.exists()


def test_oversize_body_in_an_import(cli: Any, home: Path, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUALMEM_MAX_BODY_BYTES", "10")
    rows = [{"id": "ok", "group_id": "g", "kind": "k", "name": "n", "body": "short"},
            {"id": "big", "group_id": "g", "kind": "k", "name": "n", "body": "x" * 11}]
    result = cli("import", str(_write_jsonl(tmp_path / "big.jsonl", rows)))
    assert_error(result, 1, "InvalidEpisode", "line 2")
    assert "over the limit" in result.err
    assert not home.exists()


def test_import_or_export_of_an_unusable_file(cli: Any, tmp_path: Path) -> None:
    assert_error(cli("import", str(tmp_path / "absent.jsonl")), 1, "FileArgumentError", "absent")
    add(cli)
    target = tmp_path / "no-such-folder" / "out.jsonl"
    assert_error(cli("export", str(target)), 1, "FileArgumentError", "cannot write")
    assert not target.parent.exists()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_only_on_a_terminal() -> None:
    terminal, pipe = _Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        with Progress("import", 4, stream) as bar:
            for _ in range(4):
                bar.advance()
    assert pipe.getvalue() == ""
    assert terminal.getvalue().endswith("\rimport [" + "#" * 30 + "] 4/4\n")


def test_demo_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--backend", "file", "demo"]) == 0
    out = capsys.readouterr().out
    assert "$ dualmem add" in out and "$ dualmem search" in out
    assert "byte-for-byte the same" in out and out.rstrip().endswith("steps ok")


def _subprocess(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memory", *argv], capture_output=True, text=True, cwd=REPO,
        timeout=120, check=False,
    )


def test_dualmem_script_help_in_a_real_process() -> None:
    script = Path(sys.executable).parent / "dualmem"
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0 and "COMMAND" in done.stdout and done.stderr == ""
    assert _subprocess("get", "--help").returncode == 0


def test_demo_json_in_a_real_process() -> None:
    done = _subprocess("--backend", "file", "demo", "--json")
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    assert report["ok"] is True and not Path(report["home"]).exists()
    words = {word for step in report["steps"] for entry in step["log"]
             for word in entry.get("command", [])}
    assert words >= {"init", "add", "search", "get", "list", "status", "export", "import"}


def test_an_error_in_a_real_process(tmp_path: Path) -> None:
    assert _subprocess("--home", str(tmp_path), "--backend", "file", "init").returncode == 0
    done = _subprocess("--home", str(tmp_path), "--backend", "file", "get", "missing", "--json")
    assert done.returncode == 1
    assert orjson.loads(done.stdout)["error"]["type"] == "UnknownId"
    assert done.stderr == "dualmem: error: no memory with id 'missing' (nor one starting so)\n"


def test_forget_purges_only_when_asked_and_says_what_it_found(cli: Any, home: Path) -> None:
    leaked = add(cli, "proj", "pattern", "Deploy key", "use sk_live_5Jx8 to deploy")["id"]
    assert cli("forget", "--purge", leaked, "never-stored").doc == {
        "purged": [leaked], "missing": ["never-stored"]}
    assert not any(b"sk_live_5Jx8" in path.read_bytes() for path in home.rglob("*")
                   if path.is_file())
    assert_error(cli("forget", "--purge", leaked), 1, "NotFound", "nothing purged")


def test_status_reports_hand_bullets_taken_out_of_a_view_and_restore_brings_them_back(
        cli: Any, home: Path) -> None:
    add(cli)
    patterns = home / "files" / "views" / "proj" / "patterns.md"
    committed = patterns.read_text()
    patterns.write_text(committed + "- first typed\n- second typed\n- third typed\n")
    assert _count(cli) == 4  # taken in at open
    patterns.write_text(committed)  # git checkout -- patterns.md: forgets nothing
    assert _count(cli) == 4
    text = cli("status", json=False).out
    assert "held: 3 bullet(s) taken out of their view at once" in text
    held = {item["text"]: item for item in cli("status").doc["set_aside"]}
    assert set(held) == {"first typed", "second typed", "third typed"}
    ids = " ".join(sorted(item["id"] for item in held.values()))
    assert f"dualmem delete {ids};" in text and "dualmem restore ID" in text
    assert cli("delete", held["first typed"]["id"]).code == 0  # meant: forgotten, text kept
    assert cli("restore", held["second typed"]["id"]).doc["restored"] is True
    assert "- second typed\n" in patterns.read_text()
    aside = {item["text"]: item["held"] for item in cli("status").doc["set_aside"]}
    assert aside == {"first typed": False, "third typed": True}
    assert "forgotten: 1 bullet(s)" in cli("status", json=False).out
    assert cli("restore", held["first typed"]["id"]).code == 0
    assert _count(cli) == 4 and "- first typed\n" in patterns.read_text()
    assert_error(cli("restore", held["first typed"]["id"]), 1, "NotForgotten",
                 "nothing set aside")
