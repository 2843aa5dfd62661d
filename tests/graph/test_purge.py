"""``forget --purge``: a secret written, corrected in its view, deleted and purged leaves not one
byte of itself in the home: journal, views, earlier versions, tombstones, the index (its freed
pages and log), and the graph, rebuilt from the journal (runs on Kùzu, and on LadybugDB in the
LadybugDB pass); what else the home holds is kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from contract.episodes import make

from backends.errors import BackendUnavailable
from backends.graph.kuzu import engines
from memory.store.config import Config
from memory.store.dual import DualBackend
from memory.store.purge import purge
from memory.store.selection import open_memory

SECRET = "sk_live_7Hq2ZpXw9Vb4Kd1M"


def holding(home: Path) -> list[Path]:
    """Every file below ``home`` that holds the secret's bytes."""
    return [Path(folder) / name for folder, _, names in os.walk(home) for name in names
            if SECRET.encode() in (Path(folder) / name).read_bytes()]


@pytest.mark.parametrize("backend", ["file", "auto"])
async def test_a_purged_secret_leaves_no_byte_of_itself_in_the_home(
    tmp_path: Path, backend: str
) -> None:
    config = Config.from_env({}, home=tmp_path, backend=backend, graph_engine=engines.default)
    leaked = make(1, group_id="proj", kind="pattern", name="Deploy key",
                  body=f"use {SECRET} to deploy")
    kept = make(2, group_id="proj", kind="pattern", name="Retries", body="retry twice")
    async with open_memory(config=config) as store:
        await store.upsert(leaked)
        await store.upsert(kept)
        if isinstance(store, DualBackend):
            await store.catch_up()
    view = tmp_path / "files" / "views" / "proj" / "patterns.md"
    view.write_text(view.read_text().replace("to deploy <!--", "to ship <!--"))  # a correction
    async with open_memory(config=config) as store:
        assert (await store.get(leaked.id)).body == f"use {SECRET} to ship"  # type: ignore[union-attr]
    assert any(path.is_relative_to(config.graph_dir) for path in holding(tmp_path)) is (
        backend == "auto")

    assert await purge(config, [leaked.id, "never-stored"]) == [leaked.id]
    assert holding(tmp_path) == []
    async with open_memory(config=config) as store:  # the graph is made again from the journal
        if isinstance(store, DualBackend):
            await store.catch_up()
            assert store.holds_graph
        assert await store.get(leaked.id) is None
        assert await store.get(kept.id) == kept
    assert holding(tmp_path) == []
    assert await purge(config, [leaked.id]) == []


async def test_an_embedded_graph_alone_is_refused(tmp_path: Path) -> None:
    config = Config.from_env({}, home=tmp_path, backend="graph", graph_engine=engines.default)
    with pytest.raises(BackendUnavailable, match="not an embedded graph alone"):
        await purge(config, ["ep-0001"])
