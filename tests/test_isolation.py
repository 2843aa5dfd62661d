"""Everything but the graph layer works when graphiti and kuzu cannot be imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Installed first in the child: any import of graphiti_core or kuzu fails as if not installed.
BLOCK_GRAPH = """
import sys

class _NoGraph:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"graphiti_core", "kuzu"}:
            raise ImportError(f"{name} is blocked by this test")
        return None

sys.meta_path.insert(0, _NoGraph())
"""


def run_without_graph(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error", "-c", BLOCK_GRAPH + textwrap.dedent(script), str(tmp_path)],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
    )


def test_the_blocker_blocks(tmp_path: Path) -> None:
    done = run_without_graph("import kuzu", tmp_path)
    assert done.returncode == 1 and "kuzu is blocked by this test" in done.stderr


def test_every_module_but_the_graph_layer_imports(tmp_path: Path) -> None:
    done = run_without_graph(
        """
        import importlib, pkgutil
        for package in ["backends", "fallback", "memory", "migrate", "seeds"]:
            root = importlib.import_module(package)
            for module in pkgutil.walk_packages(root.__path__, package + "."):
                if module.name.startswith("backends.graph") or module.name == "memory.__main__":
                    continue
                importlib.import_module(module.name)
        print("imported")
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "imported\n"


def test_file_layer_and_cli_work_without_the_graph(tmp_path: Path) -> None:
    done = run_without_graph(
        """
        import asyncio, contextlib, io, json, sys
        from pathlib import Path
        from memory import Episode, open_memory
        from memory.cli import main

        home = Path(sys.argv[1])

        async def use_the_file_layer():
            async with open_memory(home / "api", backend="file") as memory:
                receipt = await memory.upsert(Episode.create(
                    group_id="proj", kind="gotcha", name="Locks", body="one writer per database"))
                hits = await memory.search("writer database", group_ids=["proj"])
                assert receipt.layer == "file" and hits[0].episode.id == receipt.id

        asyncio.run(use_the_file_layer())

        def cli(*argv):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = main(["--home", str(home / "cli"), *argv])
            assert code == 0, (argv, code)
            return out.getvalue()

        assert "COMMAND" in cli("--help")
        cli("--backend", "file", "add", "--kind", "pattern",
            "--name", "Retry", "--body", "retry flaky calls with backoff")
        hits = json.loads(cli("--backend", "file", "search", "flaky", "--json"))["hits"]
        assert hits[0]["episode"]["name"] == "Retry"
        assert json.loads(cli("status", "--json"))["layer"] == "file"  # auto falls back
        assert not [m for m in sys.modules if m.partition(".")[0] in {"graphiti_core", "kuzu"}]
        print("ok")
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"
