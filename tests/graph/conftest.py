"""Every graph test runs with the network forbidden: any socket connect fails the test, except
to a Unix socket (the test FalkorDB server's is local) or to a scripted stand-in this test
started on 127.0.0.1 (stand_ins.SERVING)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from backends.graph import GraphBackend
from graph.scripted_chat import SERVING


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Refuse every network connect; also fail at teardown, since a refused connect in a
    background thread (telemetry, say) would not reach the test otherwise."""
    attempts: list[Any] = []
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def local(sock: socket.socket, address: Any) -> bool:
        return sock.family == socket.AF_UNIX or address in SERVING

    def refuse(sock: socket.socket, address: Any) -> Any:
        if local(sock, address):
            return connect(sock, address)
        attempts.append(address)
        raise OSError(f"network is off in graph tests (connect to {address!r})")

    def refuse_ex(sock: socket.socket, address: Any) -> Any:
        if local(sock, address):
            return connect_ex(sock, address)
        return refuse(sock, address)

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse_ex)
    yield attempts
    assert attempts == []


@pytest.fixture
async def graph(tmp_path: Path) -> AsyncIterator[GraphBackend]:
    opened = await GraphBackend.open(tmp_path / "graph")
    yield opened
    await opened.aclose()
