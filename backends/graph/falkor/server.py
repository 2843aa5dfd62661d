"""A connection to a FalkorDB server through graphiti's ``FalkorDriver`` (graphiti-core's
``falkordb`` extra), with the server's failures translated into ours: ``ServerUnreachable``
when it does not answer, ``BackendUnavailable`` when it answers but is no FalkorDB. Importing
this module imports neither graphiti nor falkordb; ``connect`` does."""

from __future__ import annotations

import asyncio
from typing import Any

from backends.errors import BackendUnavailable, ServerUnreachable
from backends.graph.address import ServerAddress
from backends.graph.graphiti_import import import_graphiti

LAYER = "graph"
INSTALL_HINT = "pip install 'graphiti-core[falkordb]==0.31.1'"
QUERY_LOG = "graphiti_core.driver.falkordb_driver"
"""graphiti's FalkorDB driver logs each failed query with its Cypher and parameters (memories'
text) at ERROR; we translate the failure into our own error, so its log is kept quiet unless
asked for (``dualmem --verbose`` sets it to DEBUG)"""
CONNECT_TIMEOUT = 5.0
"""seconds to reach the server: an address that does not answer fails, it does not hang"""


async def connect(address: ServerAddress) -> Any:
    """graphiti's ``FalkorDriver`` (as ``driver.OneGraphDriver``) on ``address``'s
    graph, the server known to answer and to speak FalkorDB; its indexes (graphiti's range and
    full-text ones) are built before it is returned. The caller closes it with
    ``await driver.close()``."""
    falkordb, driver_class = _import()
    try:
        # The client asks the server whether it is a cluster, synchronously, in its constructor.
        client = await asyncio.to_thread(
            falkordb.FalkorDB, host=address.host or "localhost", port=address.port or 6379,
            unix_socket_path=address.socket, username=address.username,
            password=address.password, socket_connect_timeout=CONNECT_TIMEOUT,
        )
    except Exception as exc:
        raise translate(address, exc) from exc
    try:
        await client.connection.execute_command("GRAPH.LIST")
    except Exception as exc:
        await client.connection.aclose()
        # A server without the graph module answers with the generic error code (ERR): its
        # text is all redis gives to tell an unknown command from another failure.
        if "unknown command" in str(exc).lower():
            raise BackendUnavailable(LAYER, "not a FalkorDB server",
                                     f"{address}: the graph module is not loaded") from exc
        raise translate(address, exc) from exc
    driver = driver_class(falkor_db=client, database=address.graph)
    try:
        # graphiti's own indexes, so its search works on what we write (its constructor also
        # schedules this; an index that exists already is skipped).
        await driver.build_indices_and_constraints()
    except Exception as exc:
        await driver.close()
        raise translate(address, exc) from exc
    return driver


def translate(address: ServerAddress, exc: BaseException) -> BackendUnavailable:
    """Our error for a failure of the server or of the connection to it, by the type redis
    gives each error code (``WRONGPASS``, ``NOAUTH``, ``NOPERM``, ...)."""
    import redis.exceptions

    # Before the connection errors: redis's AuthenticationError is one of them.
    if isinstance(exc, redis.exceptions.AuthenticationError
                  | redis.exceptions.AuthenticationWrongNumberOfArgsError
                  | redis.exceptions.NoPermissionError):
        return ServerUnreachable(str(address), f"refused: {exc}")
    if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError
                  | OSError):
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return ServerUnreachable(str(address), detail)
    return BackendUnavailable(LAYER, "server error", f"{address}: {exc}")


def _import() -> tuple[Any, Any]:
    import logging

    queries = logging.getLogger(QUERY_LOG)
    if queries.level == logging.NOTSET:  # not chosen by the user
        queries.setLevel(logging.CRITICAL)
    driver = import_graphiti("backends.graph.falkor.driver", INSTALL_HINT)
    import falkordb.asyncio  # graphiti's driver imported it: it is there

    return falkordb.asyncio, driver.OneGraphDriver
