"""Read-only queries to a FalkorDB server over a plain socket, for one-shot reads (a search, a
hook): the server's protocol (RESP2) spoken directly, with deadlines, and no import of the
driver. graphiti, falkordb and redis cost a one-shot process most of a second to import;
``socket`` costs nothing, and a server that does not answer fails within ``CONNECT_DEADLINE``.

Only scalars are read (strings, integers, null): the server's verbose answer writes a list or a
boolean as text. Parameters go in the query's ``CYPHER name=value`` prefix, as the server's own
clients send them.
"""

from __future__ import annotations

import socket
from typing import Any, BinaryIO

from backends.errors import BackendUnavailable, ServerUnreachable
from backends.graph.address import ServerAddress

CONNECT_DEADLINE = 0.3
"""seconds to connect: a one-shot command answers from the journal rather than wait longer"""
ANSWER_DEADLINE = 5.0
"""seconds for each answer once connected (a first read of a big graph takes a while)"""
Value = str | int | None


class WireClient:
    """One connection; ``close`` it (or use it as a context manager)."""

    def __init__(self, address: ServerAddress, *, connect: float = CONNECT_DEADLINE,
                 answer: float = ANSWER_DEADLINE) -> None:
        self.address = address
        try:
            if address.socket is not None:
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conn.settimeout(connect)
                try:
                    conn.connect(address.socket)
                except BaseException:
                    conn.close()
                    raise
            else:
                # The resolver takes bytes too (typeshed's annotation says text only).
                conn = socket.create_connection((_host(address.host or "localhost"),  # type: ignore[arg-type]
                                                 address.port or 6379), timeout=connect)
            conn.settimeout(answer)
        except OSError as exc:
            raise ServerUnreachable(str(address), _why(exc)) from exc
        self._socket = conn
        self._reader: BinaryIO = conn.makefile("rb")
        if address.password is not None:
            credentials = [address.username] if address.username else []
            try:
                self._call("AUTH", *credentials, address.password)
            except BackendUnavailable as exc:
                self.close()
                raise ServerUnreachable(str(address), f"refused: {exc.detail}") from exc

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._reader.close()
        self._socket.close()

    def query(self, text: str, *, writing: bool = False, **params: Any
              ) -> list[dict[str, Value]]:
        """The rows of a query on the address's graph (none when the graph does not exist
        yet), each a dict by column name; read-only unless ``writing``."""
        prefix = " ".join(f"{name}={_literal(value)}" for name, value in params.items())
        try:
            answer = self._call("GRAPH.QUERY" if writing else "GRAPH.RO_QUERY",
                                self.address.graph,
                                f"CYPHER {prefix} {text}" if prefix else text)
        except BackendUnavailable as exc:
            if "empty key" in exc.detail:  # the graph was never written
                return []
            raise
        if not isinstance(answer, list) or len(answer) < 3:  # statistics alone: no rows
            return []
        header, rows = answer[0], answer[1]
        return [dict(zip(header, row, strict=True)) for row in rows]

    def _call(self, *args: str) -> Any:
        parts = [b"*%d\r\n" % len(args)]
        for arg in args:
            raw = arg.encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
        try:
            self._socket.sendall(b"".join(parts))
            return self._answer()
        except OSError as exc:
            raise ServerUnreachable(str(self.address), _why(exc)) from exc

    def _answer(self) -> Any:
        line = self._reader.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("the server closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise BackendUnavailable("graph", "server error",
                                     f"{self.address}: {rest.decode(errors='replace')}")
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            data = self._reader.read(size + 2)
            if len(data) != size + 2:
                raise ConnectionError("the server closed the connection")
            return data[:-2].decode()
        if kind == b"*":
            size = int(rest)
            return None if size < 0 else [self._answer() for _ in range(size)]
        raise ConnectionError(f"not the server's protocol: {line[:40]!r}")


def _literal(value: Any) -> str:
    """A parameter as the query's prefix writes it."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ",".join(_literal(item) for item in value) + "]"
    raise TypeError(f"no query literal for {type(value).__name__}")


def _why(exc: OSError) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return exc.strerror or str(exc) or type(exc).__name__


def _host(name: str) -> str | bytes:
    """``name`` for the resolver: in ASCII as bytes, which spares loading the IDNA codec and
    ``unicodedata`` (as text, the resolver encodes every name with it)."""
    return name.encode("ascii") if name.isascii() else name
