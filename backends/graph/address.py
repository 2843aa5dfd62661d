"""Where a graph lives: an embedded engine in the home (``kuzu``, the default, or ``ladybug``)
or a FalkorDB server, named by a URL. Parsing imports no driver, so a bad setting fails before
anything is opened, with ``InvalidGraphAddress`` saying what is accepted.

    falkor://[[user]:password@]host[:port][/graph]     (also falkordb://, redis://)
    redis+unix:///path/to/socket[?graph=NAME][&password=...]   (also falkor+unix://, unix://)

The graph name defaults to ``dualmem``; many homes may share one graph (a team) or use one each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import parse_qs, quote, unquote, urlsplit

from backends.errors import InvalidGraphAddress

Engine = Literal["kuzu", "ladybug"]
ENGINES: tuple[Engine, ...] = ("kuzu", "ladybug")
DEFAULT_ENGINE: Engine = "kuzu"
DEFAULT_GRAPH = "dualmem"
DEFAULT_PORT = 6379
_TCP = frozenset({"falkor", "falkordb", "redis"})
_UNIX = frozenset({"redis+unix", "falkor+unix", "unix"})
_GRAPH_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
_FORMS = "falkor://host:port/graph or redis+unix:///path/to/socket?graph=NAME"


@dataclass(frozen=True)
class ServerAddress:
    """A graph on a FalkorDB server: TCP (``host``, ``port``) or a Unix ``socket``."""

    graph: str = DEFAULT_GRAPH
    host: str | None = None
    port: int | None = None
    socket: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def __str__(self) -> str:
        """The URL, its password masked (for messages and status)."""
        secret = "***" if self.password else ""
        user = quote(self.username or "", safe="")
        auth = f"{user}:{secret}@" if user or secret else ""
        if self.socket is not None:
            return f"redis+unix://{auth}{self.socket}?graph={self.graph}"
        host = f"[{self.host}]" if self.host and ":" in self.host else self.host
        return f"falkor://{auth}{host}:{self.port}/{self.graph}"


def check_engine(name: str) -> Engine:
    for engine in ENGINES:
        if name == engine:
            return engine
    raise InvalidGraphAddress(
        f"embedded graph engine must be one of {', '.join(ENGINES)}, not {name!r}")


def parse_server_url(url: str) -> ServerAddress:
    """The server ``url`` names, or ``InvalidGraphAddress`` saying what is wrong with it."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise InvalidGraphAddress(f"graph URL {_masked(text)!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in _TCP | _UNIX:
        raise InvalidGraphAddress(
            f"graph URL {_masked(text)!r}: expected {_FORMS}")
    query = _query(parts.query, text)
    username = unquote(parts.username) if parts.username else None
    password = query.pop("password", None) or (
        unquote(parts.password) if parts.password else None)
    if scheme in _UNIX:
        socket = unquote(parts.path)
        if parts.hostname or not socket.startswith("/") or socket.endswith("/"):
            raise InvalidGraphAddress(
                f"graph URL {_masked(text)!r}: a Unix socket URL names an absolute path to "
                "the socket, as in redis+unix:///run/falkordb.sock?graph=NAME")
        graph = _graph(query.pop("graph", DEFAULT_GRAPH), text)
        _no_more(query, text)
        return ServerAddress(graph, socket=socket, username=username, password=password)
    if not parts.hostname:
        raise InvalidGraphAddress(f"graph URL {_masked(text)!r} names no host ({_FORMS})")
    path = unquote(parts.path).strip("/")
    graph = _graph(path or query.pop("graph", DEFAULT_GRAPH), text)
    _no_more(query, text)
    return ServerAddress(graph, host=parts.hostname, port=port or DEFAULT_PORT,
                         username=username, password=password)


def _query(raw: str, text: str) -> dict[str, str]:
    try:
        found = parse_qs(raw, keep_blank_values=True, strict_parsing=bool(raw))
    except ValueError:
        raise InvalidGraphAddress(f"graph URL {_masked(text)!r}: unreadable query") from None
    repeated = sorted(key for key, values in found.items() if len(values) > 1)
    if repeated:
        raise InvalidGraphAddress(f"graph URL {_masked(text)!r}: {repeated[0]} given twice")
    return {key: values[0] for key, values in found.items()}


def _no_more(query: dict[str, str], text: str) -> None:
    if query:
        raise InvalidGraphAddress(
            f"graph URL {_masked(text)!r}: unknown option {sorted(query)[0]!r} "
            "(known: graph, password)")


def _graph(name: str, text: str) -> str:
    if not _GRAPH_NAME.fullmatch(name):
        raise InvalidGraphAddress(
            f"graph URL {_masked(text)!r}: the graph name must be 1-128 letters, digits, _ or -"
            f", not {name!r}")
    return name


def _masked(text: str) -> str:
    """``text`` with any password in it replaced, for an error message."""
    text = re.sub(r"(?<=://)([^/@]*?):[^/@]*@", r"\1:***@", text)
    return re.sub(r"(?<=[?&]password=)[^&]*", "***", text)
