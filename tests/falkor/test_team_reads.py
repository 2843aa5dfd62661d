"""A teammate's one-shot commands and hooks (``auto``, a graph URL) read the team's memory on the
server, with their own home's changes the server lacks; a server that does not answer leaves
the journal to answer, and the command says why in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
from falkor_server import address_for
from plugin.processes import REPO, dualmem

from backends.graph.address import ServerAddress
from backends.model import Episode
from fallback.layout import Layout
from memory.store.project import project_id
from memory.store.selection import open_memory

UNANSWERED = "redis+unix:///nonexistent/falkor.sock?graph=team"


def clone(tmp_path: Path, name: str, of: Path | None = None) -> Path:
    """A project folder with an initialised home; sharing ``of``'s project.json (a clone)."""
    folder = tmp_path / name
    (folder / ".dualmem").mkdir(parents=True)
    if of is not None:
        shutil.copy(of / ".dualmem" / "project.json", folder / ".dualmem" / "project.json")
    assert dualmem("init", cwd=folder).returncode == 0
    return folder


def run(folder: Path, url: str, *argv: str, stdin: bytes = b"") -> tuple[str, str]:
    done = dualmem("--graph-url", url, *argv, stdin=stdin, cwd=folder)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode(), done.stderr.decode()


def hook_input(folder: Path, event: str, **more: str) -> bytes:
    return orjson.dumps({"session_id": "s", "transcript_path": str(folder / "t.jsonl"),
                         "cwd": str(folder), "hook_event_name": event, **more})


async def write_through_the_graph(folder: Path, address: ServerAddress, *texts: str) -> None:
    home = folder / ".dualmem"
    async with open_memory(home, "auto", graph_url=str(address)) as store:
        for n, text in enumerate(texts):
            receipt = await store.upsert(Episode.create(
                group_id=project_id(home), kind="gotcha", key=f"{folder.name}-{n}",
                name=text[:40], body=text))
            assert not receipt.pending


async def test_one_shot_commands_and_hooks_read_the_teams_memory(tmp_path: Path) -> None:
    address = address_for(tmp_path)
    url = str(address)
    first = clone(tmp_path, "first")
    second = clone(tmp_path, "second", of=first)
    await write_through_the_graph(first, address, "the flux capacitor overheats on reload",
                                  "vendor the zeppelin fixtures before running offline")
    # The second clone's own memory, in its journal only (not on the server yet).
    assert dualmem("--backend", "file", "add", "--kind", "gotcha", "--name", "mine",
                   "--body", "the zeppelin cache is per clone", cwd=second).returncode == 0

    found, err = run(second, url, "search", "zeppelin", "--json")
    names = {hit["episode"]["name"] for hit in orjson.loads(found)["hits"]}
    assert names == {"vendor the zeppelin fixtures before runn", "mine"} and not err
    listed, _ = run(second, url, "list", "--kind", "gotcha", "--json")
    assert len(orjson.loads(listed)["episodes"]) == 3
    context, _ = run(second, url, "context", "--task", "reload the flux capacitor")
    assert "flux capacitor overheats" in context

    prompt, err = run(second, url, "hook", "prompt", stdin=hook_input(
        second, "UserPromptSubmit", prompt="Why does the flux capacitor overheat on reload?"))
    assert "flux capacitor overheats" in prompt and not err
    started, _ = run(second, url, "hook", "session-start",
                     stdin=hook_input(second, "SessionStart", source="startup"))
    assert "zeppelin fixtures" in started


def test_a_server_that_does_not_answer_leaves_the_journal_saying_why(tmp_path: Path) -> None:
    folder = clone(tmp_path, "alone")
    assert dualmem("--backend", "file", "add", "--kind", "gotcha", "--name", "kept",
                   "--body", "the journal answers alone", cwd=folder).returncode == 0
    found, err = run(folder, UNANSWERED, "search", "journal answers")
    assert "kept" in found
    assert err.startswith("dualmem: the graph server did not answer (") and len(
        err.splitlines()) == 1
    prompt, err = run(folder, UNANSWERED, "hook", "prompt", stdin=hook_input(
        folder, "UserPromptSubmit", prompt="does the journal answer alone?"))
    assert "journal answers alone" in prompt
    assert err.startswith("dualmem hook prompt: the graph server did not answer (")


def test_the_wire_client_passes_any_text_as_a_parameter(tmp_path: Path) -> None:
    import falkordb

    from backends.graph.falkor.wire import WireClient

    hostile = 'a"b\\c\'d}) MATCH (n) DETACH DELETE n //\u00e9'
    address = address_for(tmp_path)
    with WireClient(address) as client:
        assert client.query("RETURN $s AS s", s=hostile) == []  # no graph yet
        assert address.socket is not None
        made = falkordb.FalkorDB(unix_socket_path=address.socket)
        made.select_graph(address.graph).query("CREATE (:Kept)")
        made.connection.close()
        assert client.query("RETURN $s AS s, $n AS n", s=hostile, n=7) == [
            {"s": hostile, "n": 7}]
        assert client.query("MATCH (k:Kept) RETURN count(k) AS n") == [{"n": 1}]


def test_connecting_by_host_loads_no_codec() -> None:
    """A host name in ASCII goes to the resolver as bytes: as text, the resolver loads the
    IDNA codec (and ``unicodedata``), a cost every one-shot command on a TCP server paid."""
    script = (
        "import socket, sys\n"
        "from backends.graph.address import ServerAddress\n"
        "from backends.graph.falkor.wire import WireClient\n"
        "listener = socket.socket(); listener.bind(('127.0.0.1', 0)); listener.listen()\n"
        "for host in ('127.0.0.1', 'localhost'):\n"
        "    WireClient(ServerAddress('g', host=host, port=listener.getsockname()[1])).close()\n"
        "print(sorted({'encodings.idna', 'unicodedata'} & set(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_teams_search_and_prompt_hook_read_the_journal_through_its_index_alone(
    tmp_path: Path,
) -> None:
    """Nothing of the file layer's writing (its guard included), nor hashlib's OpenSSL, nor a
    driver, nor what costs a start-up and serves no client (``socket``'s enums, ``base64``,
    ``zlib``, ``dataclasses``, orjson; git outside a repository): a read on
    a team's server needs the journal only for what it holds that the server lacks (here its
    one memory, the graph never written)."""
    folder = clone(tmp_path, "lean")
    assert dualmem("--backend", "file", "add", "--kind", "gotcha", "--name", "kept",
                   "--body", "the quokka cache is per clone", cwd=folder).returncode == 0
    # A write leaves its folder's mtime unrecorded while it is within the racy window, so the
    # next read lists the folder again: a read once the mtime is past it records it agreeing.
    files = Layout(folder / ".dualmem" / "files")
    for group in files.groups():
        past = files.group_folder(group).stat().st_mtime - 1
        os.utime(files.group_folder(group), (past, past))
    assert dualmem("--backend", "file", "list", cwd=folder).returncode == 0
    prompt = hook_input(folder, "UserPromptSubmit", prompt="where is the quokka cache kept?")
    url = str(address_for(tmp_path))
    script = (
        "import io, sys\n"
        "from contextlib import redirect_stdout\n"
        "from memory.cli import main\n"
        "out = io.StringIO()\n"
        "with redirect_stdout(out):\n"
        f"    assert main(['--graph-url', {url!r}, 'search', 'quokka']) == 0\n"
        f"    sys.stdin = io.TextIOWrapper(io.BytesIO({prompt!r}))\n"
        f"    assert main(['--graph-url', {url!r}, 'hook', 'prompt']) == 0\n"
        "assert out.getvalue().count('quokka cache is per clone') == 2, out.getvalue()\n"
        "print(sorted({'fallback.store', 'fallback.writer', 'fallback.intake', 'hashlib',\n"
        "              'asyncio', 'falkordb', 'redis', 'graphiti_core', 'numpy', 'socket',\n"
        "              'base64', 'zlib', 'fallback.guard', 'dataclasses', 'orjson',\n"
        "              'subprocess'}\n"
        "             & set(sys.modules)))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUALMEM_")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=folder, env=env | {"PYTHONPATH": str(REPO)}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]" and not done.stderr


def test_a_memory_added_to_a_view_by_hand_is_read_beside_the_teams(tmp_path: Path) -> None:
    # The journal's index has not seen it: the file layer opens, and takes it in.
    folder = clone(tmp_path, "by-hand")
    assert dualmem("--backend", "file", "add", "--kind", "gotcha", "--name", "kept",
                   "--body", "the quokka cache is per clone", cwd=folder).returncode == 0
    home = folder / ".dualmem"
    view = Layout(home / "files").view_path(project_id(home), "gotcha")
    view.write_text(view.read_text() + "- the wombat lint runs before every commit\n")
    found, err = run(folder, str(address_for(tmp_path)), "search", "wombat lint")
    assert "wombat lint runs before every commit" in found and not err
