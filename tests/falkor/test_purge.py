"""``forget --purge`` with the graph on a FalkorDB server: a secret written in ``auto`` (so it
reaches the server, and this home's copies of the server's index) and rewritten (so the server
keeps its retired facts) leaves not one byte of itself in the home nor in any property of any
node or edge on the server; the team's other memories stay. A server that does not answer is
refused in one line, and nothing is purged."""

from __future__ import annotations

from pathlib import Path

import falkordb
import pytest
from contract.episodes import make
from falkor_server import address_for, shared_server
from graph.test_purge import SECRET, holding

from backends.errors import BackendUnavailable
from backends.graph.address import ServerAddress
from backends.graph.falkor.backend import FalkorBackend
from backends.graph.history import Enrichment, digest
from backends.search.entities import Entity, entity_uuid
from memory.store.config import Config
from memory.store.purge import purge
from memory.store.selection import open_backend, open_memory

UNANSWERED = "redis+unix:///nonexistent/falkor.sock?graph=team"


def on_the_server(address: ServerAddress) -> tuple[list[str], set[str], set[str]]:
    """Every property value of every node and relationship of the graph holding the secret,
    the uuids of its episodes and of those recorded as enriched."""
    client = falkordb.FalkorDB(unix_socket_path=str(shared_server().socket))
    try:
        graph = client.select_graph(address.graph)
        values = [str(value) for query in ("MATCH (n) RETURN properties(n)",
                                           "MATCH ()-[r]->() RETURN properties(r)")
                  for (found,) in graph.query(query).result_set for value in found.values()]
        episodes, enriched = ({uuid for (uuid,) in graph.query(query).result_set} for query in (
            "MATCH (e:Episodic) RETURN e.uuid", "MATCH (d:DualmemEnriched) RETURN d.uuid"))
    finally:
        client.connection.close()
    return [value for value in values if SECRET in value], episodes, enriched


async def test_a_purged_secret_leaves_no_byte_on_the_server_nor_in_the_home(
    tmp_path: Path
) -> None:
    address = address_for(tmp_path)
    config = Config.from_env({}, home=tmp_path, backend="auto", graph_url=str(address))
    # Named in backticks, the secret is an entity, with facts to the files beside it;
    # `deploy.sh` is the kept memory's too.
    leaked = make(1, group_id="proj", kind="pattern", name="Deploy key",
                  body=f"use `{SECRET}` with `deploy.sh` from `ci/release.yml`")
    kept = make(2, group_id="proj", kind="pattern", name="Retries",
                body="retry `deploy.sh` twice")
    rewritten = leaked.model_copy(update={"body": f"use `{SECRET}` with `deploy.sh`"})
    async with open_memory(config=config) as store:
        for episode in (leaked, kept, rewritten):  # the rewrite retires a fact: history
            assert not (await store.upsert(episode)).pending  # on the server
    graph = await FalkorBackend.open(address)  # what graphiti's LLM extraction would add
    try:
        vault = Entity(entity_uuid("proj", "Entity", "vault"), "Entity", "vault",
                       f"the vault holds {SECRET}")
        assert await graph.keep_enrichments([Enrichment(
            leaked.id, "proj", digest(rewritten), (vault,), ())]) == 1
    finally:
        await graph.aclose()
    view, _ = await open_backend(config, one_shot=True)  # the team copy a command reads
    try:
        assert leaked.id in [hit.episode.id for hit in await view.search("deploy key")]
    finally:
        await view.aclose()
    assert {path.relative_to(tmp_path).parts[0] for path in holding(tmp_path)} >= {
        "files", "server-index"}
    assert on_the_server(address)[0] and on_the_server(address)[2] == {leaked.id}

    async with open_memory(config=config):  # a running process holds its copy: refused
        with pytest.raises(BackendUnavailable, match="another process holds the copy"):
            await purge(config, [leaked.id])
    assert on_the_server(address)[0] and holding(tmp_path)  # nothing purged

    assert await purge(config, [leaked.id, "never-stored"]) == [leaked.id]
    assert holding(tmp_path) == []
    assert on_the_server(address) == ([], {kept.id}, set())
    async with open_memory(config=config) as store:  # the copies made again from the server
        assert await store.get(leaked.id) is None
        assert await store.get(kept.id) == kept
    assert holding(tmp_path) == []
    assert await purge(config, [leaked.id]) == []


async def test_a_server_that_does_not_answer_is_refused_and_nothing_purged(
    tmp_path: Path
) -> None:
    leaked = make(1, group_id="proj", kind="pattern", name="Deploy key",
                  body=f"use {SECRET} to deploy")
    async with open_memory(tmp_path, "file") as store:
        await store.upsert(leaked)
    config = Config.from_env({}, home=tmp_path, backend="auto", graph_url=UNANSWERED)
    with pytest.raises(BackendUnavailable) as refused:
        await purge(config, [leaked.id])
    assert "\n" not in str(refused.value) and "unreachable" in str(refused.value)
    async with open_memory(tmp_path, "file") as store:
        assert await store.get(leaked.id) == leaked
    assert holding(tmp_path)
