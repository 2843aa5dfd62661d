"""Opening and closing: one database per path per process, the lock held by another process,
corrupt or unreadable folders, a changed embedder, no network, no crash at close."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest

from backends.errors import BackendUnavailable, StoreCorrupt
from backends.graph import GraphBackend, HashingEmbedder
from backends.graph.index import FILE as INDEX_FILE
from backends.graph.kuzu import engines
from backends.model import Episode
from memory.cli import main
from memory.store.config import Config
from memory.store.selection import open_backend

DB_FILE = engines.FILES[engines.default]  # the run's engine (tests/conftest.py)

REPO = Path(__file__).resolve().parents[2]
RUN_ENGINE = f"from backends.graph.kuzu import engines; engines.default = {engines.default!r}\n"
NOTE = Episode.create(group_id="proj", kind="gotcha", name="Locks", body="one writer per database")


def python(script: str, *args: str, **popen: object) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "GRAPHITI_TELEMETRY_ENABLED"}
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-W", "error", "-c", RUN_ENGINE + textwrap.dedent(script), *args],
        cwd=REPO, env=env, text=True, **popen,
    )


def try_open_elsewhere(folder: Path) -> str:
    """What another process gets when it opens ``folder``: "opened" or the reason."""
    child = python(
        """
        import asyncio, sys
        from backends.errors import BackendUnavailable
        from backends.graph import GraphBackend
        async def main():
            try:
                await (await GraphBackend.open(sys.argv[1])).aclose()
                print("opened")
            except BackendUnavailable as exc:
                print(exc.reason)
        asyncio.run(main())
        """,
        str(folder), stdout=subprocess.PIPE,
    )
    out, _ = child.communicate(timeout=60)
    assert child.returncode == 0
    return out.strip()


async def test_another_process_holding_the_graph_is_named_and_auto_falls_back(
    tmp_path: Path,
) -> None:
    config = Config(home=tmp_path / "home")
    await (await GraphBackend.open(config.graph_dir)).aclose()
    holder = python(
        """
        import asyncio, sys
        from backends.graph import GraphBackend
        async def main():
            graph = await GraphBackend.open(sys.argv[1])
            print("ready", flush=True)
            sys.stdin.readline()
            await graph.aclose()
        asyncio.run(main())
        """,
        str(config.graph_dir), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        with pytest.raises(BackendUnavailable) as refused:
            await GraphBackend.open(config.graph_dir)
        assert refused.value.layer == "graph"
        assert refused.value.reason == "locked by another process"
        assert refused.value.detail == f"pid {holder.pid}"

        store, selection = await open_backend(config)
        try:
            assert selection.layer == "file"
            assert "locked by another process" in selection.reason
            assert (await store.upsert(NOTE)).layer == "file"
        finally:
            await store.aclose()
        with pytest.raises(BackendUnavailable, match="locked by another process"):
            await open_backend(Config(home=config.home, backend="graph"))
    finally:
        holder.communicate("\n", timeout=60)
    assert holder.returncode == 0

    store, selection = await open_backend(config)  # the holder's close released the lock
    assert selection.layer == "graph"
    assert (await store.upsert(NOTE)).layer == "graph"
    await store.aclose()


async def test_one_process_shares_one_database_until_the_last_handle_closes(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "graph"
    first = await GraphBackend.open(folder)
    second = await GraphBackend.open(folder)
    await first.upsert(NOTE)
    assert [hit.episode for hit in await second.search("writer")] == [NOTE]
    await first.aclose()
    assert await second.get(NOTE.id) == NOTE
    assert try_open_elsewhere(folder) == "locked by another process"
    await second.aclose()
    assert try_open_elsewhere(folder) == "opened"


async def test_a_corrupt_database_is_reported_and_auto_rebuilds_it(tmp_path: Path) -> None:
    config = Config(home=tmp_path / "home")
    config.graph_dir.mkdir(parents=True)
    (config.graph_dir / DB_FILE).write_bytes(b"not a database\n" * 1000)
    with pytest.raises(BackendUnavailable) as refused:
        await GraphBackend.open(config.graph_dir)
    assert refused.value.reason == "corrupt" and "not a valid" in refused.value.detail
    store, selection = await open_backend(config)
    try:
        assert selection.layer == "graph"
        assert "rebuilt from the journal: the damaged graph" in selection.reason
        assert "not a valid" in selection.reason
    finally:
        await store.aclose()
    aside = list((tmp_path / "home").glob(f"{config.graph_dir.name}.damaged-*"))
    assert len(aside) == 1 and (aside[0] / DB_FILE).read_bytes() == b"not a database\n" * 1000


async def test_a_folder_that_cannot_be_made_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "home").write_text("a file where the home folder should be")
    with pytest.raises(BackendUnavailable) as refused:
        await GraphBackend.open(tmp_path / "home" / "graph")
    assert refused.value.reason == "unreadable"


def test_without_graphiti_and_kuzu_auto_says_not_installed(tmp_path: Path) -> None:
    child = python(
        """
        import sys
        class Blocked:
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in {"graphiti_core", "kuzu"}:
                    raise ImportError(name)
        sys.meta_path.insert(0, Blocked())
        import asyncio
        from memory.store.config import Config
        from memory.store.selection import open_backend
        async def main():
            store, selection = await open_backend(Config.from_env({}, home=sys.argv[1]))
            print(selection.layer, selection.reason.split(":")[0])
            await store.aclose()
        asyncio.run(main())
        """,
        str(tmp_path / "home"), stdout=subprocess.PIPE,
    )
    out, _ = child.communicate(timeout=60)
    assert child.returncode == 0 and out == "file graph layer not installed\n"


async def test_a_changed_embedder_is_reported_until_the_graph_is_reembedded(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "graph"
    graph = await GraphBackend.open(folder)
    await graph.upsert(NOTE)
    await graph.aclose()
    smaller = HashingEmbedder(dimension=64)
    with pytest.raises(BackendUnavailable) as refused:
        await GraphBackend.open(folder, embedder=smaller)
    assert refused.value.reason == "embedder mismatch" and "reembed" in refused.value.detail

    assert await GraphBackend.reembed(folder, smaller) == 1
    graph = await GraphBackend.open(folder, embedder=smaller)
    assert [hit.episode for hit in await graph.search("writer")] == [NOTE]
    await graph.aclose()
    with pytest.raises(BackendUnavailable, match="embedder mismatch"):
        await GraphBackend.open(folder)


def test_a_fresh_process_never_connects_anywhere_and_closes_cleanly(tmp_path: Path) -> None:
    """Repeated open/use/close cycles (with scans abandoned half-way, and a graph left open at
    exit) never crash, and import no graphiti (creating the graph reads its schema from
    graphiti's source); importing the enrichment, which does import it, turns telemetry off."""
    child = python(
        """
        import asyncio, os, socket, sys
        attempts = []
        def refuse(sock, address):
            attempts.append(address)
            raise OSError("no network")
        socket.socket.connect = socket.socket.connect_ex = refuse
        from backends.graph import GraphBackend
        from backends.model import Episode
        async def cycle(round):
            graph = await GraphBackend.open(sys.argv[1])
            await graph.upsert_many([
                Episode.create(group_id="g", kind="k", name=f"n{i}", body=f"round {round} item {i}")
                for i in range(50)])
            assert len(await graph.search("round item", limit=5)) == 5
            async for _ in graph.scan():
                break
            await graph.aclose()
        async def main():
            for round in range(8):
                await cycle(round)
            left_open = await GraphBackend.open(sys.argv[1])  # closed at exit, in order
            assert len(await left_open.search("round item")) == 10
        asyncio.run(main())
        assert "graphiti_core" not in sys.modules, "an embedded graph imported graphiti"
        import backends.graph.enrich
        assert "graphiti_core" in sys.modules
        print(os.environ["GRAPHITI_TELEMETRY_ENABLED"], attempts)
        """,
        str(tmp_path / "graph"), stdout=subprocess.PIPE,
    )
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 0
    assert out == "false []\n"


async def test_a_row_that_is_no_valid_episode_makes_the_graph_corrupt(tmp_path: Path) -> None:
    import kuzu

    folder = tmp_path / "graph"
    graph = await GraphBackend.open(folder)
    await graph.upsert(NOTE)
    await graph.aclose()
    database = kuzu.Database(str(folder / DB_FILE))
    connection = kuzu.Connection(database)
    connection.execute("MATCH (e:Episodic) SET e.group_id = 'not a group!'")
    connection.close()
    database.close()
    # The search index (a cache validated by count and token, not by content) still opens;
    # whatever reads the row says it is corrupt.
    graph = await GraphBackend.open(folder)
    try:
        with pytest.raises(StoreCorrupt, match="group_id"):
            await graph.get(NOTE.id)
    finally:
        await graph.aclose()
    (folder / INDEX_FILE).unlink()
    with pytest.raises(BackendUnavailable) as refused:
        await GraphBackend.open(folder)
    assert refused.value.reason == "corrupt" and "group_id" in refused.value.detail


def test_the_cli_names_an_embedder_change_and_reembed_mends_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def store_with_an_older_embedder() -> None:
        graph = await GraphBackend.open(Config(home=tmp_path).graph_dir,
                                        embedder=HashingEmbedder(dimension=64))
        await graph.upsert(NOTE)
        await graph.aclose()

    asyncio.run(store_with_an_older_embedder())
    home = ["--home", str(tmp_path), "--backend", "graph"]
    assert main([*home, "list"]) == 1
    assert "embedder mismatch" in capsys.readouterr().err
    assert main([*home, "reembed", "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["reembedded"] == 1
    assert main([*home, "search", "writer", "--group", "proj", "--json"]) == 0
    assert NOTE.id in capsys.readouterr().out
