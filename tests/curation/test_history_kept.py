"""A memory's history lives beside the journal: the graph's facts a rewrite retired and its
earlier versions are still there after the graph is deleted and rebuilt from the journal."""

from __future__ import annotations

import shutil
from pathlib import Path

from every_layer import open_dual_store

from curation.conftest import PROJECT
from curation.test_operations import memory
from memory.curation.operations import Curator
from memory.store.config import Config

ADR = '{{"adr_id": "ADR-1", "title": "Sessions", "decision": "Keep `{}` in cookies"}}'


async def test_history_survives_a_rebuilt_graph(tmp_path: Path) -> None:
    home = tmp_path / "home"
    files = Config(home=home).files_dir
    store = await open_dual_store(home)
    try:
        curator = Curator(store, PROJECT, files)
        await store.upsert(memory("d-1", ADR.format("SessionStore"), kind="adr"))
        await curator.update("d-1", body=ADR.format("TokenCache"), reason="renamed")
        before = await curator.history("d-1")
    finally:
        await store.aclose()
    assert [fact.target.name for fact in before.retired_facts] == ["SessionStore"]
    shutil.rmtree(Config(home=home).graph_dir)
    store = await open_dual_store(home)
    try:
        after = await Curator(store, PROJECT, files).history("d-1")
    finally:
        await store.aclose()
    assert [v.episode.body for v in after.versions] == [ADR.format("SessionStore")]
    assert after.retired_facts == before.retired_facts
