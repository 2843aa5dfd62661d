"""Memories off a FalkorDB server for good (``forget --purge``): each episode with every fact
its extraction wrote or kept (history included) and its mentions (``queries.DELETE``, which
stamps the change feed, so every process and copy drops it), the entities only it held, and its
enrichment record. Over the plain wire (``wire.py``): a purge needs neither graphiti nor an
embedder."""

from __future__ import annotations

from collections.abc import Collection

from backends.graph.address import ServerAddress
from backends.graph.falkor import queries
from backends.graph.falkor.wire import WireClient


def purge_on_server(address: ServerAddress, episode_ids: Collection[str]) -> list[str]:
    """Delete these episodes on the server; returns those it held. Raises ``ServerUnreachable``
    (a ``BackendUnavailable``) when it does not answer, before anything is deleted."""
    found = []
    with WireClient(address) as client:
        for episode_id in episode_ids:
            deleted = client.query(queries.DELETE_ROWS, writing=True, uuid=episode_id)
            client.query(queries.FORGET_ENRICHED, writing=True, uuid=episode_id)
            if not deleted:
                continue
            found.append(episode_id)
            dropped = sorted({str(row["entity"]) for row in deleted if row["entity"] is not None})
            if dropped:
                client.query(queries.DELETE_ORPHANS, writing=True, uuids=dropped)
    return found
