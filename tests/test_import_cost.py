"""Start-up stays lean: importing ``memory``, building the command line's parser, or loading
the command groups a hook or a search runs, imports none of the heavy dependencies."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "graphiti_core", "kuzu", "yaml", "mcp", "pydantic", "onnxruntime", "tokenizers")
# asyncio (ssl, sockets, subprocesses, a thread pool) was a fifth of a one-shot read's start-up:
# they await nothing only a loop can wait on. The rest serve only some calls: rapidfuzz a
# server's many typo look-ups, logging a rare event, hashlib (OpenSSL) and secrets writes or a
# server graph, shutil (bz2, lzma) argparse's terminal width.
NOT_ONE_SHOT = {
    "asyncio": ("asyncio", "ssl", "concurrent"),
    "rare": ("rapidfuzz", "logging", "hashlib", "secrets", "shutil"),
}
# What only a write or a changed view needs: writing episodes and views, taking in a person's
# edits, earlier versions, purges; and git (a project's place, recorded by a write).
WRITES = ("fallback.writer", "fallback.keeper", "fallback.page_edits", "fallback.purge",
          "fallback.versions", "fallback.kept_log")
# What a graph knows and what enrichment did: built by the graph layer and curation only; and
# a server's address, parsed only when a graph URL is set.
GRAPH_ONLY = ("backends.known", "backends.graph.address")


def heavy_modules_after(script: str, among: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules (or top-level packages) of ``among`` a fresh interpreter has imported after
    ``script``."""
    probe = textwrap.dedent(script) + textwrap.dedent(f"""
        import sys
        loaded = {{*sys.modules, *(m.partition(".")[0] for m in sys.modules)}}
        print(sorted(loaded & set({among!r})))
    """)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=True)
    return eval(done.stdout)  # type: ignore[no-any-return]


def test_importing_memory_loads_nothing_heavy() -> None:
    assert heavy_modules_after("import memory") == []


def test_the_parser_loads_nothing_heavy() -> None:
    assert heavy_modules_after("from memory.cli import build_parser; build_parser()") == []


@pytest.mark.parametrize("command", ["search", "add", "list", "hook", "mcp"])
def test_a_hot_command_group_loads_nothing_heavy(command: str) -> None:
    script = f"from memory.cli import build_parser; build_parser({command!r})"
    assert heavy_modules_after(script) == []


def test_an_exported_name_loads_what_it_needs_only() -> None:
    assert heavy_modules_after("from memory import Episode, open_memory") == []


def test_the_file_layer_loads_nothing_heavy_nor_what_only_some_calls_need() -> None:
    # watchdog: only a process that watches; rapidfuzz: only a query term the index lacks.
    script = "import fallback, sys; print(sorted({'watchdog', 'rapidfuzz'} & set(sys.modules)))"
    assert heavy_modules_after("import fallback") == []
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


def test_the_dual_store_loads_nothing_heavy_until_it_holds_the_graph() -> None:
    # A one-shot read through ``auto`` (every hook, every search) never opens the graph.
    assert heavy_modules_after("import memory.store.dual") == []


def stored_then_searched(tmp_path: Path, *options: str, search: bool = True) -> str:
    """A script that stores a gotcha through the file layer (an auto write would take the
    graph), then finds it with ``search`` (unless not asked) and the prompt hook, each run
    with ``options``; it fails unless every step shows the gotcha."""
    home = str(tmp_path / ".dualmem")
    prompt = {"hook_event_name": "UserPromptSubmit", "cwd": str(tmp_path),
              "prompt": "how do we handle stale caches?"}
    searched = (f'assert main(["--home", {home!r}, *{options!r}, "search", "stale caches"]) == 0'
                if search else "pass")
    return f"""
        import io, sys, orjson
        from contextlib import redirect_stdout
        from memory.cli import main
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["--home", {home!r}, "--backend", "file", "add", "--kind", "gotcha",
                         "--name", "stale caches", "--body", "stale caches hide writes"]) == 0
            {searched}
            sys.stdin = io.TextIOWrapper(io.BytesIO(orjson.dumps({prompt!r})))
            assert main(["--home", {home!r}, *{options!r}, "hook", "prompt"]) == 0
        assert out.getvalue().count("stale caches hide writes") == {1 + search}, out.getvalue()
    """


@pytest.mark.parametrize("backend", ["auto", "file"])
def test_a_search_and_a_prompt_hook_load_nothing_heavy(tmp_path: Path, backend: str) -> None:
    # The whole of what a hook or a search runs, in one process.
    assert heavy_modules_after(stored_then_searched(tmp_path, "--backend", backend)) == []


@pytest.mark.parametrize("among", list(NOT_ONE_SHOT))
@pytest.mark.parametrize("backend", ["auto", "file"])
def test_a_search_and_a_prompt_hook_load_only_what_every_call_needs(
    tmp_path: Path, backend: str, among: str
) -> None:
    # Misspelled and unknown words ("cashes", "handle") take the typo step too.
    home = str(tmp_path / ".dualmem")
    heavy_modules_after(f"""
        import io
        from contextlib import redirect_stdout
        from memory.cli import main
        with redirect_stdout(io.StringIO()):
            assert main(["--home", {home!r}, "--backend", "file", "add", "--kind", "gotcha",
                         "--name", "stale caches", "--body", "stale caches hide writes"]) == 0
    """)
    prompt = {"hook_event_name": "UserPromptSubmit", "cwd": str(tmp_path),
              "prompt": "how do we handle stale caches?"}
    script = f"""
        import io, sys, orjson
        from contextlib import redirect_stdout
        from memory.cli import main
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["--home", {home!r}, "--backend", {backend!r}, "search",
                         "stale cashes"]) == 0
            sys.stdin = io.TextIOWrapper(io.BytesIO(orjson.dumps({prompt!r})))
            assert main(["--home", {home!r}, "--backend", {backend!r}, "hook", "prompt"]) == 0
        assert out.getvalue().count("stale caches hide writes") == 2, out.getvalue()
    """
    assert heavy_modules_after(script, among=NOT_ONE_SHOT[among]) == []


def modules_at_exit(folder: Path, argv: list[str], among: tuple[str, ...],
                    stdin: bytes = b"") -> list[str]:
    """The modules of ``among`` loaded when ``dualmem ARGV`` (its entry point, as a hook or a
    script runs it) exits in ``folder``; it must exit 0 with nothing on stderr."""
    probe = textwrap.dedent(f"""
        import atexit, runpy, sys
        atexit.register(lambda: print(sorted(set(sys.modules) & set({among!r})),
                                      file=sys.stderr))
        sys.argv = ["dualmem", *{argv!r}]
        runpy.run_module("memory", run_name="__main__", alter_sys=True)
    """)
    done = subprocess.run([sys.executable, "-c", probe], input=stdin, capture_output=True,
                          cwd=folder, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    return eval(done.stderr.decode())  # type: ignore[no-any-return]


def test_a_one_shot_search_and_prompt_hook_load_nothing_only_writes_need(tmp_path: Path) -> None:
    home = str(tmp_path / ".dualmem")
    add = ["--home", home, "--backend", "file", "add", "--kind", "gotcha", "--name",
           "stale caches", "--body", "stale caches hide writes"]
    assert modules_at_exit(tmp_path, add, WRITES) != []  # what the probe sees, a write loads
    searched = ["--home", home, "search", "stale caches"]
    assert modules_at_exit(tmp_path, searched, (*WRITES, *GRAPH_ONLY, "subprocess")) == []
    prompt = orjson.dumps({"hook_event_name": "UserPromptSubmit", "cwd": str(tmp_path),
                           "prompt": "how do we handle stale caches?"})
    # The prompt hook asks git for the working set (``memory.workset``) only in a folder git
    # could find a repository from: a temporary folder is in none. It renders its lines with
    # ``memory.agent.lines``, not the export's module.
    hooked = ["--home", home, "hook", "prompt"]
    assert modules_at_exit(tmp_path, hooked, (*WRITES, *GRAPH_ONLY, "subprocess",
                                              "memory.agent.markdown", "backends.insights"),
                           prompt) == []


# orjson's module init imports dataclasses (with inspect, ast, dis, tokenize), uuid (with
# platform), datetime and json: a sixth of a 10k search. A read parses with the standard
# library's json; only a write serialises with orjson, and only a write mints an id.
WRITE_ONLY = ("orjson", "dataclasses", "uuid", "inspect")


def test_a_one_shot_search_and_prompt_hook_load_neither_orjson_nor_what_it_drags_in(
    tmp_path: Path,
) -> None:
    home = str(tmp_path / ".dualmem")
    add = ["--home", home, "--backend", "file", "add", "--kind", "gotcha", "--name",
           "stale caches", "--body", "stale caches hide writes"]
    assert "orjson" in modules_at_exit(tmp_path, add, WRITE_ONLY)  # a write does load it
    searched = ["--home", home, "search", "stale caches"]
    modules_at_exit(tmp_path, searched, WRITE_ONLY)  # the first read indexes what was added
    assert modules_at_exit(tmp_path, searched, WRITE_ONLY) == []
    prompt = orjson.dumps({"hook_event_name": "UserPromptSubmit", "cwd": str(tmp_path),
                           "prompt": "how do we handle stale caches?"})
    assert modules_at_exit(tmp_path, ["--home", home, "hook", "prompt"], WRITE_ONLY, prompt) == []


# Creating a home's graph needs graphiti's schema, read from its source (kuzu/graphiti_schema.py):
# importing graphiti was four fifths of `dualmem init`, which seeds only the project's overview
# (not the system knowledge: pydantic, yaml). A file home's status reads the journal
# once: no graph, no seeding or migrator (pydantic, yaml), no watcher, no event loop.
NOT_STATUS = (*HEAVY, "asyncio", "watchdog", "migrate", "seeds.knowledge", "memory.importers")


def test_init_imports_no_graphiti_and_a_file_homes_status_nothing_it_does_not_read(
    tmp_path: Path,
) -> None:
    home = str(tmp_path / ".dualmem")
    made = modules_at_exit(tmp_path, ["--home", home, "init"],
                           ("graphiti_core", "kuzu", "pydantic", "yaml", "seeds.knowledge"))
    assert made == ["kuzu"]  # the graph was made, without graphiti, nor the seeds' models
    add = ["--home", home, "--backend", "file", "add", "--kind", "gotcha", "--name",
           "stale caches", "--body", "stale caches hide writes"]
    modules_at_exit(tmp_path, add, ())
    assert modules_at_exit(tmp_path, ["--home", home, "--backend", "file", "status"],
                           NOT_STATUS) == []


def test_the_session_start_hook_on_a_file_home_loads_no_pydantic_nor_agent_api(
        tmp_path: Path) -> None:
    # Every new session waits for this hook: its digest and session lines need neither the
    # agent API (which loads pydantic through the outcomes) nor context assembly.
    home = str(tmp_path / ".dualmem")
    add = ["--home", home, "--backend", "file", "add", "--kind", "gotcha", "--name",
           "stale caches", "--body", "stale caches hide writes"]
    modules_at_exit(tmp_path, add, ())
    start = orjson.dumps({"hook_event_name": "SessionStart", "cwd": str(tmp_path),
                          "source": "startup"})
    hooked = ["--home", home, "--backend", "file", "hook", "session-start"]
    among = ("pydantic", "memory.agent.memories", "memory.context.assemble",
             "memory.agent.sessions")  # the last: what the probe sees, the hook loads it
    assert modules_at_exit(tmp_path, hooked, among, start) == ["memory.agent.sessions"]
