"""Moving a laptop's memory: ``dualmem migrate --to`` replays a Kùzu home into a FalkorDB server
and into LadybugDB, losing nothing (episodes with their times and validity, entities,
mentions, facts, and the facts a rewrite retired, which the journal does not hold), resumable
and idempotent through the ledger."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from falkor_server import address_for

from backends.graph.address import ServerAddress
from backends.graph.falkor.backend import FalkorBackend
from backends.graph.kuzu import engines
from backends.model import Episode
from backends.protocol import Position
from fallback import FileBackend
from memory import Adr, record_adr, supersede_adr
from memory.cli import main
from memory.store.config import Config
from memory.store.selection import open_memory

REPO = Path(__file__).resolve().parents[2]
T0 = datetime(2024, 3, 1, 9, 30, 15, 123456, tzinfo=UTC)


def memories() -> list[Episode]:
    found = [
        Episode.create(group_id="proj", kind="codebase_discovery", name=f"discovery {n}",
                       key=f"d{n}", body={"files": [f"src/m{n}.py", "src/shared.py"],
                                          "patterns": [f"pattern {n % 3}"]},
                       created_at=T0.replace(day=1 + n))
        for n in range(20)
    ]
    found.append(Episode.create(
        group_id="proj", kind="gotcha", name="superseded", key="old",
        body="the cache was global", created_at=T0,
        valid_at=T0.replace(month=1), invalid_at=T0.replace(month=2)))
    found.append(Episode.create(group_id="other", kind="note", name="quotes",
                                body="'single' \"double\" back\\slash\nnew line ünïcode",
                                created_at=T0))
    return found


async def fill(home: Path) -> list[Episode]:
    """A Kùzu home through auto, one memory deleted, one written to the graph alone."""
    episodes = memories()
    async with open_memory(home, "auto") as store:
        await store.upsert_many(episodes)  # type: ignore[attr-defined]
        await store.delete(episodes[3].id)
        # A rewrite that changes a fact: the old one stays in the graph as history.
        await store.upsert(Episode.create(
            group_id="proj", kind="codebase_discovery", name="discovery 5", key="d5",
            body={"files": ["src/m5.py", "src/moved.py"], "patterns": ["pattern 2"]},
            created_at=T0.replace(day=6)))
        # Facts with validity: a decision and the one that supersedes it.
        await record_adr(store, "proj", Adr(adr_id="ADR-1", title="Sessions in cookies",
                                            decision="Keep `SessionStore` in cookies"))
        await supersede_adr(store, "proj", "ADR-1", Adr(
            adr_id="ADR-2", title="Sessions in Redis", decision="Move `SessionStore` to Redis"))
    only_graph = Episode.create(group_id="proj", kind="note", name="graph only",
                                body="written with --backend graph", created_at=T0)
    async with open_memory(home, "graph") as graph:  # as `--backend graph` writes
        await graph.upsert(only_graph)
        return [episode async for episode in graph.scan()]


def migrate(home: Path, target: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = main(["--home", str(home), "--json", "migrate", "--to", target])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data: dict[str, Any] = orjson.loads(captured.out)
    return data


@pytest.mark.skipif(engines.default != "kuzu", reason="moves a Kùzu home")
def test_a_kuzu_home_moves_to_a_falkordb_server_losing_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    source = asyncio.run(fill(home))
    assert len(source) == len(memories()) + 2  # one deleted, one graph-only, two decisions
    address = address_for(home)

    retired = kuzu_retired(Config(home=home).graph_dir)
    assert retired and {fact[1] for fact in retired} == {source_id(source, "d5")}

    first = migrate(home, str(address), capsys)
    assert first["ok"] and first["written"] == len(source)
    # The journal's position is recorded on the server and beside the home's copy of its
    # index: nothing is pending there, for status and for the next holder.
    assert asyncio.run(recorded(home, address)) == asyncio.run(journal_position(home))
    code = main(["--home", str(home), "--graph-url", str(address), "--json", "migrate",
                 "--dry-run"])
    preview = orjson.loads(capsys.readouterr().out)
    assert code == 0 and preview["written"] == 0 and preview["deleted"] == 0, preview
    assert first["journal"] == "the journal took in the graph's memories first"
    assert first["history"] == {"retired": len(retired), "written": len(retired),
                                "orphaned": 0, "missing": 0, "ok": True}
    again = migrate(home, str(address), capsys)
    assert again["ok"] and again["written"] == 0 and again["unchanged"] == len(source)
    assert again["history"]["written"] == 0 and again["history"]["ok"]

    async def on_the_server() -> tuple[list[Episode], set[tuple[str, ...]], set[Fact],
                                       set[tuple[Any, ...]]]:
        server = await FalkorBackend.open(address)
        try:
            found = [episode async for episode in server.scan()]
            rows = await server.connection.run(
                "MATCH (e:Episodic)-[:MENTIONS]->(n:Entity) "
                "RETURN e.uuid AS e, n.uuid AS n, n.name AS name")
            facts = await server.connection.run(
                "MATCH (a:Entity)-[r:RELATES_TO]->(b:Entity) RETURN r.uuid AS f, a.uuid AS a,"
                " b.uuid AS b, r.fact AS fact, r.valid_at AS valid, r.invalid_at AS invalid")
            history = await server.connection.run(
                "MATCH (a:Entity)-[r:RELATES_TO]->(b:Entity) WHERE r.expired_at IS NOT NULL"
                " MATCH (e:Episodic {uuid: r.episodes[0]}) WHERE r.uuid IN e.entity_edges"
                " RETURN r.uuid AS f, e.uuid AS e, a.uuid AS a, b.uuid AS b, r.fact AS fact,"
                " r.valid_at AS valid, r.invalid_at AS invalid, r.expired_at AS expired")
            return found, {(row["e"], row["n"], row["name"]) for row in rows}, {
                (r["f"], r["a"], r["b"], r["fact"], datetime.fromisoformat(r["valid"]),
                 r["invalid"] is not None) for r in facts}, {
                (r["f"], r["e"], r["a"], r["b"], r["fact"], *(
                    datetime.fromisoformat(r[t]) for t in ("valid", "invalid", "expired")))
                for r in history}
        finally:
            await server.aclose()

    moved, mentions, facts, history = asyncio.run(on_the_server())
    assert moved == source  # every field: ids, bodies, times, validity
    assert mentions == kuzu_mentions(Config(home=home).graph_dir)
    assert facts == kuzu_facts(Config(home=home).graph_dir)
    assert any(invalid for *_, invalid in facts)  # the superseded decision's facts
    assert history == retired  # with their times, kept by their episode

    # The home now points at the server: every memory is there, through auto.
    code = main(["--home", str(home), "--graph-url", str(address), "--json", "status"])
    status = orjson.loads(capsys.readouterr().out)
    assert code == 0 and status["dual"]["pending"] == 0, status


async def recorded(home: Path, address: ServerAddress) -> Position | None:
    server = await FalkorBackend.open(address)
    try:
        return await server.applied((await journal_position(home)).epoch)
    finally:
        await server.aclose()


async def journal_position(home: Path) -> Position:
    files = await FileBackend.open(Config(home=home).files_dir, watch=False)
    try:
        return files.position()
    finally:
        await files.aclose()


Fact = tuple[str, str, str, str, datetime, bool]
"""uuid, source, target, text, valid_at, invalidated"""
Retired = tuple[Any, ...]
"""uuid, episode, source, target, text, valid_at, invalid_at, expired_at"""
RETIRED = (
    "MATCH (a:Entity)-[:RELATES_TO]->(f:RelatesToNode_)-[:RELATES_TO]->(b:Entity)"
    " WHERE f.expired_at IS NOT NULL MATCH (e:Episodic) WHERE e.uuid = f.episodes[1]"
    " AND list_contains(e.entity_edges, f.uuid)"
    " RETURN f.uuid, e.uuid, a.uuid, b.uuid, f.fact, f.valid_at, f.invalid_at, f.expired_at"
)


def source_id(episodes: list[Episode], key: str) -> str:
    return next(episode.id for episode in episodes if episode.name == f"discovery {key[1:]}")


def kuzu_retired(folder: Path) -> set[Retired]:
    return {(*row[:5], *(t.replace(tzinfo=UTC) for t in row[5:]))
            for row in kuzu_rows(folder, RETIRED)}


def kuzu_mentions(folder: Path) -> set[tuple[str, ...]]:
    return {tuple(row) for row in kuzu_rows(
        folder, "MATCH (e:Episodic)-[:MENTIONS]->(n:Entity) RETURN e.uuid, n.uuid, n.name")}


def kuzu_facts(folder: Path) -> set[Fact]:
    return {(f, a, b, text, valid.replace(tzinfo=UTC), invalid is not None)
            for f, a, b, text, valid, invalid in kuzu_rows(
                folder, "MATCH (a:Entity)-[:RELATES_TO]->(f:RelatesToNode_)-[:RELATES_TO]->"
                "(b:Entity) RETURN f.uuid, a.uuid, b.uuid, f.fact, f.valid_at, f.invalid_at")}


def kuzu_rows(folder: Path, query: str) -> list[list[Any]]:
    import kuzu

    database = kuzu.Database(str(folder / engines.FILES["kuzu"]), read_only=True)
    connection = kuzu.Connection(database)
    try:
        result = connection.execute(query)
        assert isinstance(result, kuzu.QueryResult)
        rows = [list(row) for row in result.get_all()]
        result.close()
        return rows
    finally:
        connection.close()
        database.close()


@pytest.mark.skipif(engines.default != "kuzu", reason="moves a Kùzu home")
def test_a_kuzu_home_moves_to_ladybug_in_a_process_of_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    source = asyncio.run(fill(home))
    retired = kuzu_retired(Config(home=home).graph_dir)
    moved = migrate(home, "ladybug", capsys)
    assert moved["ok"] and moved["written"] == len(source)
    assert moved["history"]["written"] == len(retired) == 1 and moved["history"]["ok"]
    again = migrate(home, "ladybug", capsys)
    assert again["written"] == 0 and again["history"]["written"] == 0

    # Read back by LadybugDB itself, in a process that loads only it.
    child = subprocess.run(
        [sys.executable, "-c", LADYBUG_READER, str(Config(home=home).engine_dir("ladybug")),
         RETIRED],
        capture_output=True, text=True, cwd=REPO, check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("DUALMEM_")})
    assert child.returncode == 0, child.stderr
    read = orjson.loads(child.stdout)
    assert [Episode.model_validate(e) for e in read["episodes"]] == source
    assert {tuple(row) for row in read["mentions"]} == kuzu_mentions(Config(home=home).graph_dir)
    assert {(*row[:5], *(datetime.fromisoformat(t).replace(tzinfo=UTC) for t in row[5:]))
            for row in read["retired"]} == retired


def test_retired_facts_that_are_not_ours_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home, path = tmp_path / "home", tmp_path / "history.json"
    assert main(["--home", str(home), "init"]) == 0
    for text in (b"{", b"{}", b'[{"uuid": "x"}]', b'[{"uuid": "x", "source": 1}]'):
        path.write_bytes(text)
        capsys.readouterr()
        assert main(["--home", str(home), "migrate", "--history", str(path)]) != 0
        assert "retired fact" in capsys.readouterr().err
    assert main(["--home", str(home), "migrate", "--history", str(tmp_path / "none")]) != 0
    assert "cannot read" in capsys.readouterr().err
    assert main(["--home", str(home), "migrate", "--to", "ladybug", "--history", str(path)]) != 0
    assert "--history goes with a plain migrate only" in capsys.readouterr().err


LADYBUG_READER = """
import asyncio, sys, orjson
from backends.graph import GraphBackend
from backends.graph.kuzu.database import Session
async def main(folder):
    graph = await GraphBackend.open(folder, engine="ladybug")
    episodes = [e.model_dump(mode="json") async for e in graph.scan()]
    rows = await graph._core.read(lambda s: s.rows(
        "MATCH (e:Episodic)-[:MENTIONS]->(n:Entity) RETURN e.uuid, n.uuid, n.name"))
    retired = await graph._core.read(lambda s: s.rows(sys.argv[2]))
    await graph.aclose()
    print(orjson.dumps({"episodes": episodes, "mentions": rows, "retired": retired},
                       default=str).decode())
asyncio.run(main(sys.argv[1]))
"""
