"""Who may drive the browser's server: only the page this launch printed.

A per-launch token travels in the page's URL (``?token=``) and in every API request's
``X-Dualmem-Token`` header: another local user, or a web page in the user's browser, cannot
guess it, and a cross-site page cannot set the header without a preflight we never grant. The
``Host`` header must name loopback, so a DNS-rebound name reaching 127.0.0.1 is refused."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

HEADER = b"x-dualmem-token"
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
OPEN_PATHS = ("/static/",)
"""the page's own code and styles: no memory in them, and a <script> cannot send a header"""


class TokenGuard:
    """ASGI middleware: 403 for a request without this launch's token or from a foreign host."""

    def __init__(self, app: App, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._allowed(scope):
            await _refuse(send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1").rsplit(":", 1)[0]
        if host not in LOOPBACK:
            return False
        path: str = scope["path"]
        if path.startswith(OPEN_PATHS):
            return True
        if path.startswith("/api/"):
            given = headers.get(HEADER, b"")
        else:  # the page: its URL carries the token
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = query.get("token", [""])[0].encode()
        return hmac.compare_digest(given, self.token)


async def _refuse(send: Send) -> None:
    body = b'{"error": "this page needs the URL dualmem ui printed (its token)"}'
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
