"""One process's connection to a FalkorDB server's graph: runs a query, naming the server's
failures as ours (``server.translate``), and reads episodes back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backends.errors import BackendUnavailable, DualmemError, StoreCorrupt, WriteFailed
from backends.graph.address import ServerAddress
from backends.graph.falkor import queries, server
from backends.graph.falkor.rows import episode_of
from backends.graph.shared import LAYER
from backends.model import Episode


class Connection:
    """graphiti's ``FalkorDriver`` on one graph, until ``close``."""

    def __init__(self, driver: Any, address: ServerAddress) -> None:
        self._driver: Any | None = driver
        self.address = address

    @property
    def driver(self) -> Any:
        """The driver (``BackendUnavailable`` "closed" once closed)."""
        self.ensure_open()
        return self._driver

    def ensure_open(self) -> None:
        if self._driver is None:
            raise BackendUnavailable(LAYER, "closed")

    @property
    def closed(self) -> bool:
        return self._driver is None

    async def run(self, query: str, *, writing: bool = False,
                  **params: Any) -> list[dict[str, Any]]:
        """The rows of ``query``; a failure as ours (``WriteFailed`` when ``writing``)."""
        try:
            result = await self.driver.execute_query(query, **params)
        except Exception as exc:
            error = server.translate(self.address, exc)
            if writing:
                error.__cause__ = exc
                raise WriteFailed(f"graph layer: {error}") from error
            raise error from exc
        # None: the driver's answer to an index that exists already (nothing to return).
        return [] if result is None else list(result[0])

    async def fetch(self, keys: Sequence[str]) -> dict[str, Episode]:
        """The episodes of ``keys`` the graph holds."""
        if not keys:
            return {}
        found = await self.run(queries.EPISODES_BY_KEYS, keys=list(keys))
        try:
            return {row["uuid"]: episode_of(row) for row in found}
        except (DualmemError, ValueError, TypeError, KeyError) as exc:
            raise StoreCorrupt(str(self.address), f"a row is no valid episode: {exc}") from exc

    async def close(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            await driver.close()
