"""The graph a configuration names: the home's embedded graph (Kùzu or LadybugDB), or a graph
on a FalkorDB server. Every part of the store opens it through here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory.store.config import Config

if TYPE_CHECKING:
    from backends.graph import GraphBackend


async def open_graph(config: Config, *, read_only: bool = False) -> GraphBackend:
    """Open the configured graph; ``BackendUnavailable`` says why it cannot be."""
    from backends.graph import GraphBackend

    return await GraphBackend.open(config.graph_dir, max_body_bytes=config.max_body_bytes,
                                   read_only=read_only, engine=config.graph_engine)


def describe(config: Config) -> str:
    """Where the graph is, for status and messages (a server's password masked)."""
    if config.graph_url is not None:
        return str(config.graph_url)
    return f"{config.graph_engine}: {config.graph_dir}"
