"""Where a graph lives: an embedded engine in the home (``kuzu``, the default, or ``ladybug``)
or a FalkorDB server, named by a URL. Parsing imports no driver, so a bad setting fails before
anything is opened, with ``InvalidGraphAddress`` saying what is accepted.

    falkor://[[user]:password@]host[:port][/graph]     (also falkordb://, redis://)
    redis+unix:///path/to/socket[?graph=NAME][&password=...]   (also falkor+unix://, unix://)

The graph name defaults to ``dualmem``; many homes may share one graph (a team) or use one each.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import parse_qs, quote, unquote, urlsplit

from backends.errors import InvalidGraphAddress
from backends.graph.engine_names import DEFAULT_ENGINE as DEFAULT_ENGINE
from backends.graph.engine_names import ENGINES as ENGINES
from backends.graph.engine_names import Engine as Engine
from backends.graph.engine_names import check_engine as check_engine

DEFAULT_GRAPH = "dualmem"
DEFAULT_PORT = 6379
_TCP = frozenset({"falkor", "falkordb", "redis"})
_UNIX = frozenset({"redis+unix", "falkor+unix", "unix"})
_GRAPH_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
_FORMS = "falkor://host:port/graph or redis+unix:///path/to/socket?graph=NAME"


# A NamedTuple, not a dataclass: a team's one-shot read parses its URL, and dataclasses' import
# (with inspect, ast, dis, tokenize) was a tenth of a prompt hook's instructions.
class ServerAddress(NamedTuple):
    """A graph on a FalkorDB server: TCP (``host``, ``port``) or a Unix ``socket``."""

    graph: str = DEFAULT_GRAPH
    host: str | None = None
    port: int | None = None
    socket: str | None = None
    username: str | None = None
    password: str | None = None

    def __repr__(self) -> str:
        """Every field but the password."""
        return (f"ServerAddress(graph={self.graph!r}, host={self.host!r}, port={self.port!r}, "
                f"socket={self.socket!r}, username={self.username!r})")

    def __str__(self) -> str:
        """The URL, its password masked (for messages and status)."""
        secret = "***" if self.password else ""
        user = quote(self.username or "", safe="")
        auth = f"{user}:{secret}@" if user or secret else ""
        if self.socket is not None:
            return f"redis+unix://{auth}{self.socket}?graph={self.graph}"
        host = f"[{self.host}]" if self.host and ":" in self.host else self.host
        return f"falkor://{auth}{host}:{self.port}/{self.graph}"


def parse_server_url(url: str) -> ServerAddress:
    """The server ``url`` names, or ``InvalidGraphAddress`` saying what is wrong with it. No
    message holds the password, even one with an unencoded ``/``, ``?``, ``#`` or ``@`` that
    would make the URL split elsewhere (the rest of it then reads as a port, a path or a
    fragment, and would be echoed)."""
    text = url.strip()
    shown = _masked(text)
    userinfo = _userinfo(text)
    if userinfo is not None and any(c in text[slice(*userinfo)] for c in "/?#@"):
        raise InvalidGraphAddress(
            f"graph URL {shown!r}: the user name or password holds / ? # or @: write them "
            "percent-encoded (%2F %3F %23 %40)")
    if "#" in text:  # urlsplit would drop the rest as a fragment: a password cut short
        raise InvalidGraphAddress(
            f"graph URL {shown!r}: holds a #: write it percent-encoded (%23)")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:  # its message quotes the URL's parts: never shown
        raise InvalidGraphAddress(f"graph URL {shown!r}: {_unreadable(exc)}") from None
    scheme = parts.scheme.lower()
    if scheme not in _TCP | _UNIX:
        raise InvalidGraphAddress(
            f"graph URL {shown!r}: expected {_FORMS}")
    query = _query(parts.query, text)
    username = unquote(parts.username) if parts.username else None
    password = query.pop("password", None) or (
        unquote(parts.password) if parts.password else None)
    if scheme in _UNIX:
        socket = unquote(parts.path)
        if parts.hostname or not socket.startswith("/") or socket.endswith("/"):
            raise InvalidGraphAddress(
                f"graph URL {shown!r}: a Unix socket URL names an absolute path to "
                "the socket, as in redis+unix:///run/falkordb.sock?graph=NAME")
        graph = _graph(query.pop("graph", DEFAULT_GRAPH), text)
        _no_more(query, text)
        return ServerAddress(graph, socket=socket, username=username, password=password)
    if not parts.hostname:
        raise InvalidGraphAddress(f"graph URL {shown!r} names no host ({_FORMS})")
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
        raise InvalidGraphAddress(
            f"graph URL {_masked(text)!r}: option{_named(repeated[0], text)} given twice")
    return {key: values[0] for key, values in found.items()}


def _no_more(query: dict[str, str], text: str) -> None:
    if query:
        raise InvalidGraphAddress(
            f"graph URL {_masked(text)!r}: unknown option{_named(sorted(query)[0], text)} "
            "(known: graph, password)")


def _graph(name: str, text: str) -> str:
    if not _GRAPH_NAME.fullmatch(name):
        raise InvalidGraphAddress(
            f"graph URL {_masked(text)!r}: the graph name must be 1-128 letters, digits, _ or -"
            f", not {name!r}")
    return name


def _named(option: str, text: str) -> str:
    """An option's name for a message; none beside a query password, which may hold an
    unencoded ``&`` and then reads as options of its own."""
    return "" if _QUERY_PASSWORD.search(text) else f" {option!r}"


def _unreadable(exc: ValueError) -> str:
    if "out of range" in str(exc):
        return "the port is out of range 0-65535"
    if "Port" in str(exc):
        return "the port is not a number"
    return "not a URL dualmem can read"


_QUERY_PASSWORD = re.compile(r"(?<=[?&]password=)[^&]*")


def _userinfo(text: str) -> tuple[int, int] | None:
    """Where the user name and password are in ``text`` (start, end), or None: up to the last
    ``@`` after ``://`` outside a query password, which a password unencoded may hold too."""
    start = text.find("://") + 3
    if start < 3 or text.startswith("/", start):  # no host part: a socket's path follows
        return None
    hidden = [match.span() for match in _QUERY_PASSWORD.finditer(text)]
    for at in range(len(text) - 1, start - 1, -1):
        if text[at] == "@" and not any(a <= at < b for a, b in hidden):
            return start, at
    return None


def _masked(text: str) -> str:
    """``text`` with any password in it replaced, for an error message."""
    userinfo = _userinfo(text)
    if userinfo is not None:
        start, end = userinfo
        user, colon, _ = text[start:end].partition(":")
        text = text[:start] + (f"{user}:***" if colon else text[start:end]) + text[end:]
    return _QUERY_PASSWORD.sub("***", text)
