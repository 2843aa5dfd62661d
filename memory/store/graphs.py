"""The graph a configuration names: the home's embedded graph (Kùzu or LadybugDB), or a graph
on a FalkorDB server. Every part of the store opens it through here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from backends.graph.address import DEFAULT_ENGINE, ENGINES, check_engine, parse_server_url
from backends.protocol import Position
from memory.store.config import Config

if TYPE_CHECKING:  # numpy: not for a one-shot read, which never opens the graph
    from backends.graph.embedder import AnyEmbedder
    from backends.graph.protocol import Graph


def follows_a_journal(followed: Position | None) -> bool:
    """Whether a graph that recorded ``followed`` holds only what a journal gave it (not
    written alone since: ``GraphBackend.mark_written_alone``)."""
    from backends.graph.kuzu.store import WRITTEN_ALONE  # only a holder of the graph asks

    return followed is not None and followed.epoch != WRITTEN_ALONE


async def open_graph(config: Config, *, read_only: bool = False,
                     embedder: AnyEmbedder | None = None, llm: Any = None) -> Graph:
    """Open the configured graph; ``BackendUnavailable`` says why it cannot be (a server that
    does not answer: ``ServerUnreachable``). A server's graph has no read-only mode: the server
    decides what a client may do. ``llm`` (graphiti's ``LLMClient``) enriches the graph's
    free-text memories in the background."""
    if config.graph_url is not None:
        from backends.graph.falkor.backend import FalkorBackend

        return await FalkorBackend.open(config.graph_url, max_body_bytes=config.max_body_bytes,
                                        embedder=embedder, index_folder=index_folder(config),
                                        llm=llm)
    from backends.graph import GraphBackend

    return await GraphBackend.open(config.graph_dir, max_body_bytes=config.max_body_bytes,
                                   read_only=read_only, engine=config.graph_engine,
                                   embedder=embedder, llm=llm)


def index_folder(config: Config) -> Path | None:
    """Where this home keeps its copy of a server graph's search index (one per graph,
    named by its address, password masked), or None for an embedded graph."""
    if config.graph_url is None:
        return None
    # binascii's crc32 (zlib's): not hashlib, whose OpenSSL costs a one-shot read ~5 ms, nor
    # zlib, whose library is not loaded otherwise; a name needs no more.
    import binascii

    return config.home / "server-index" / f"{binascii.crc32(str(config.graph_url).encode()):08x}"


def stream(config: Config) -> str:
    """The ledger's name for replaying the journal into this configuration's graph: each
    target keeps its own record, so moving to another graph replays everything once."""
    if config.graph_url is not None:
        return f"files->{config.graph_url}"
    if config.graph_engine == DEFAULT_ENGINE:
        from migrate import FILES_TO_GRAPH  # the migrator's import is no one-shot read's cost

        return FILES_TO_GRAPH
    return f"files->{config.graph_engine}"


def retarget(config: Config, target: str) -> Config:
    """``config`` with its graph at ``target``: an embedded engine's name (``kuzu``,
    ``ladybug``: the home's folder for it) or a server URL. ``InvalidGraphAddress`` for
    anything else."""
    if target in ENGINES:
        return config._replace(graph_engine=check_engine(target), graph_url=None)
    return config._replace(graph_url=parse_server_url(target))


def describe(config: Config) -> str:
    """Where the graph is, for status and messages (a server's password masked)."""
    if config.graph_url is not None:
        return str(config.graph_url)
    return f"{config.graph_engine}: {config.graph_dir}"
