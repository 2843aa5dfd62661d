"""Read-only queries to a FalkorDB server over a plain socket, for one-shot reads (a search, a
hook): the server's protocol (RESP2) spoken directly, with deadlines, and no import of the
driver. graphiti, falkordb and redis cost a one-shot process most of a second to import; the
C module under ``socket`` costs nothing, and a server that does not answer fails within
``CONNECT_DEADLINE``.

Only scalars are read (strings, integers, null): the server's verbose answer writes a list or a
boolean as text. Parameters go in the query's ``CYPHER name=value`` prefix, as the server's own
clients send them.
"""

from __future__ import annotations

# Not ``socket``: its enums and ``selectors`` cost a one-shot read ~8 ms of CPU (13 M
# instructions, a third of what the server path added to a search); a client that connects,
# sends and receives needs only the C module under it.
import _socket
from typing import Any

from backends.errors import BackendUnavailable, ServerUnreachable
from backends.graph.address import ServerAddress

CONNECT_DEADLINE = 0.3
"""seconds to connect: a one-shot command answers from the journal rather than wait longer"""
ANSWER_DEADLINE = 5.0
"""seconds for each answer once connected (a first read of a big graph takes a while)"""
RECEIVE = 1 << 16
"""bytes asked of the socket at a time"""
Value = str | int | None


class WireClient:
    """One connection; ``close`` it (or use it as a context manager)."""

    def __init__(self, address: ServerAddress, *, connect: float = CONNECT_DEADLINE,
                 answer: float = ANSWER_DEADLINE) -> None:
        self.address = address
        try:
            self._socket = _connected(address, connect)
            self._socket.settimeout(answer)
        except OSError as exc:
            raise ServerUnreachable(str(address), _why(exc)) from exc
        self._reader = _Reader(self._socket)
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
        line = self._reader.line()
        kind, rest = line[:1], line[1:]
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
            return self._reader.take(size).decode()
        if kind == b"*":
            size = int(rest)
            return None if size < 0 else [self._answer() for _ in range(size)]
        raise ConnectionError(f"not the server's protocol: {line[:40]!r}")


class _Reader:
    """The answers' bytes as they arrive: lines, and strings of a known size."""

    def __init__(self, conn: _socket.socket) -> None:
        self._conn = conn
        self._data = b""
        self._at = 0
        """where the unread bytes of ``_data`` start"""

    def line(self) -> bytes:
        """The next line, without its CRLF."""
        while (end := self._data.find(b"\r\n", self._at)) < 0:
            self._more()
        line, self._at = self._data[self._at : end], end + 2
        return line

    def take(self, size: int) -> bytes:
        """The next ``size`` bytes, and the CRLF after them."""
        while len(self._data) - self._at < size + 2:
            self._more()
        data, self._at = self._data[self._at : self._at + size], self._at + size + 2
        return data

    def _more(self) -> None:
        chunk = self._conn.recv(RECEIVE)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self._data = self._data[self._at :] + chunk
        self._at = 0


def _connected(address: ServerAddress, deadline: float) -> _socket.socket:
    """A socket connected to ``address`` within ``deadline`` seconds (each address the host's
    name resolves to in turn, as ``socket.create_connection`` tries them)."""
    if address.socket is not None:
        places: list[tuple[int, int, int, Any]] = [
            (_socket.AF_UNIX, _socket.SOCK_STREAM, 0, address.socket)]
    else:
        places = [(family, kind, proto, where) for family, kind, proto, _, where in
                  _socket.getaddrinfo(_host(address.host or "localhost"),
                                      address.port or 6379, 0, _socket.SOCK_STREAM)]
    failed: OSError = OSError("the host's name resolves to no address")
    for family, kind, proto, where in places:
        conn = _socket.socket(family, kind, proto)
        try:
            conn.settimeout(deadline)
            conn.connect(where)
        except OSError as exc:
            conn.close()
            failed = exc
            continue
        except BaseException:
            conn.close()
            raise
        return conn
    raise failed


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
