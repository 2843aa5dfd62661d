"""``dualmem forget --purge``: memories' text out of every file of the home. The journal and
the logs kept beside it are scrubbed (``fallback.purge``); an embedded graph (Kùzu,
LadybugDB), whose freed pages keep deleted bytes, is not edited but rebuilt: taken over first
(so that what only it held joins the journal, and its retired facts and enrichments are kept
beside the journal), then removed once the journal is scrubbed, and made again from the journal
by the next process that takes it over. A graph server's copy is deleted there
(``backends.graph.falkor.purge``), and this home's copies of its index dropped."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from backends.errors import BackendUnavailable
from backends.flock import flocked
from backends.safe_files import open_for_write, refuse_links_in
from fallback import FileBackend
from memory.store.config import Config
from memory.store.dual import DualBackend
from memory.store.selection import open_memory


async def purge(config: Config, episode_ids: Collection[str]) -> list[str]:
    """Forget these memories for good; returns those found. Raises ``BackendUnavailable``
    where the text cannot be reached (a graph server that does not answer, or a graph or copy
    held by another process), having purged nothing."""
    if config.graph_url is not None:
        return await _purge_with_server(config, episode_ids)
    if config.backend == "graph":
        raise BackendUnavailable("graph", "purge reaches the journal and an embedded graph "
                                 "(in auto) or a graph server, not an embedded graph alone")
    graph_dir = config.graph_dir
    rebuild = config.backend == "auto" and graph_dir.exists()
    if rebuild:
        async with open_memory(config=config) as store:
            if not isinstance(store, DualBackend) or not store.holds_graph:
                raise BackendUnavailable("graph", "another process holds the graph: close it "
                                         "(the MCP server, dualmem watch) and purge again")
            await store.catch_up()
    found = await _purge_journal(config, episode_ids)
    if rebuild:
        _remove_graph(config)
    return found


async def _purge_journal(config: Config, episode_ids: Collection[str]) -> list[str]:
    files = await FileBackend.open(config.files_dir, watch=False)
    try:
        return await files.purge(episode_ids)
    finally:
        await files.aclose()


async def _purge_with_server(config: Config, episode_ids: Collection[str]) -> list[str]:
    """The server first (one that does not answer leaves everything as it was), then the
    journal, then this home's copies of the server's index (``server-index/<digest>``: its
    freed pages keep deleted bytes), dropped whole to be made again from the server."""
    from backends.graph.falkor.purge import purge_on_server  # only a server purge needs it
    from memory.store.graphs import index_folder

    folder = index_folder(config)
    assert config.graph_url is not None and folder is not None
    with _copies_held(folder):
        on_server = purge_on_server(config.graph_url, episode_ids)
        in_journal = await _purge_journal(config, episode_ids)
        shutil.rmtree(folder)
    found = {*on_server, *in_journal}
    return [key for key in episode_ids if key in found]


@contextmanager
def _copies_held(folder: Path) -> Iterator[None]:
    """Hold the copies in ``folder``: the graph holder's (``LocalCopy``'s lock, refused when a
    long-running process has it) and the one-shot commands' (``flocked``, a moment each)."""
    from backends.graph.falkor.local_copy import LOCK

    refuse_links_in(folder)  # the copies are removed: never through a link out of the home
    folder.mkdir(parents=True, exist_ok=True)
    descriptor = open_for_write(folder / LOCK, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise BackendUnavailable("graph", "another process holds the copy of the graph "
                                     f"server's index in {folder}: close it (the MCP server, "
                                     "dualmem watch) and purge again") from None
        with flocked(folder):
            yield
    finally:
        os.close(descriptor)


def _remove_graph(config: Config) -> None:
    from backends.graph.kuzu import engines, salvage  # only a purge in auto needs them

    folder = config.graph_dir
    with flocked(folder.parent):
        if any(salvage.held_elsewhere(folder / name) for name in set(engines.FILES.values())):
            raise BackendUnavailable("graph", f"another process opened the graph in {folder} "
                                     "meanwhile: the journal is purged, the graph not; close "
                                     "it and purge again")
        shutil.rmtree(folder)
