"""Every graph test runs with the network forbidden: any socket connect fails the test, except
to a scripted stand-in this test started on 127.0.0.1 (stand_ins.SERVING)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from backends.graph import GraphBackend
from tests.graph.scripted_chat import SERVING


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Refuse every connect; also fail at teardown, since a refused connect in a background
    thread (telemetry, say) would not reach the test otherwise."""
    attempts: list[Any] = []

    connect = socket.socket.connect

    def refuse(sock: socket.socket, address: Any) -> Any:
        if address in SERVING:  # a scripted stand-in on this machine
            return connect(sock, address)
        attempts.append(address)
        raise OSError(f"network is off in graph tests (connect to {address!r})")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    yield attempts
    assert attempts == []


@pytest.fixture
async def graph(tmp_path: Path) -> AsyncIterator[GraphBackend]:
    opened = await GraphBackend.open(tmp_path / "graph")
    yield opened
    await opened.aclose()
