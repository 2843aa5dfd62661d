"""``dualmem forget --purge``: memories' text out of every file of the home. The journal and
the logs kept beside it are scrubbed (``fallback.purge``); an embedded graph (Kùzu,
LadybugDB), whose freed pages keep deleted bytes, is not edited but rebuilt: taken over first
(so that what only it held joins the journal, and its retired facts and enrichments are kept
beside the journal), then removed once the journal is scrubbed, and made again from the journal
by the next process that takes it over."""

from __future__ import annotations

import shutil
from collections.abc import Collection

from backends.errors import BackendUnavailable
from backends.flock import flocked
from fallback import FileBackend
from memory.store.config import Config
from memory.store.dual import DualBackend
from memory.store.selection import open_memory


async def purge(config: Config, episode_ids: Collection[str]) -> list[str]:
    """Forget these memories for good; returns those found. Raises ``BackendUnavailable``
    where the text cannot be reached (a graph on a server, or held by another process)."""
    if config.graph_url is not None or config.backend == "graph":
        raise BackendUnavailable("graph", "purge reaches the journal and an embedded graph "
                                 "only, not a graph server's (not yet)")
    graph_dir = config.graph_dir
    rebuild = config.backend == "auto" and graph_dir.exists()
    if rebuild:
        async with open_memory(config=config) as store:
            if not isinstance(store, DualBackend) or not store.holds_graph:
                raise BackendUnavailable("graph", "another process holds the graph: close it "
                                         "(the MCP server, dualmem watch) and purge again")
            await store.catch_up()
    files = await FileBackend.open(config.files_dir, watch=False)
    try:
        found = await files.purge(episode_ids)
    finally:
        await files.aclose()
    if rebuild:
        _remove_graph(config)
    return found


def _remove_graph(config: Config) -> None:
    from backends.graph.kuzu import engines, salvage  # only a purge in auto needs them

    folder = config.graph_dir
    with flocked(folder.parent):
        if any(salvage.held_elsewhere(folder / name) for name in set(engines.FILES.values())):
            raise BackendUnavailable("graph", f"another process opened the graph in {folder} "
                                     "meanwhile: the journal is purged, the graph not; close "
                                     "it and purge again")
        shutil.rmtree(folder)
