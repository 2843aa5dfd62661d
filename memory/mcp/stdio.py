"""The SDK's stdio transport, with one gap closed: a request that JSON can carry but that holds
text which is not Unicode (a lone surrogate escaped as ``"\\udc80"``, as a JavaScript client
sends one) fails the SDK's parser, which drops it unanswered, so its client waited for ever.
Such a request is answered here with a JSON-RPC error naming the problem; nothing else changes.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage

from backends.model import NOT_UTF8, is_utf8
from memory.output import printable

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""a cheap first look: only a line with a surrogate's escape may hold a lone one"""


class _Requests:
    """The lines of the wire's stdin, less those holding lone surrogates, which are answered
    on ``answers`` (set once the transport's write stream exists)."""

    def __init__(self, wire: anyio.AsyncFile[str]) -> None:
        self._wire = wire
        self.answers: WriteStream[SessionMessage] | None = None
        self._ready = anyio.Event()

    def answer_on(self, answers: WriteStream[SessionMessage]) -> None:
        self.answers = answers
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._wire:
            refusal = _refusal(line) if _SURROGATE_ESCAPE.search(line) else None
            if refusal is None:
                yield line
                continue
            await self._ready.wait()
            assert self.answers is not None
            await self.answers.send(SessionMessage(refusal))


def _refusal(line: str) -> mcp_types.JSONRPCError | None:
    """The error answering the request ``line``, when it holds text that is not Unicode."""
    try:
        message = json.loads(line)  # takes lone surrogates, unlike the SDK's parser
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" not in message:
        return None
    bad = next((text for text in _strings(message) if not is_utf8(text)), None)
    if bad is None or "id" not in message:
        return None  # a notification holding one is dropped, as the SDK drops it
    request_id = message["id"]
    if not isinstance(request_id, int | str) or isinstance(request_id, bool) or not is_utf8(
        str(request_id)
    ):
        request_id = None  # JSON-RPC's id of a request whose own id cannot be read
    return mcp_types.JSONRPCError(
        jsonrpc="2.0", id=request_id,
        error=mcp_types.ErrorData(
            code=mcp_types.INVALID_PARAMS,
            message=f"the text {printable(bad)[:80]} {NOT_UTF8}: the request was not run"),
    )


def _strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield key
            yield from _strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from _strings(value)


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[
    tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]
]:
    """``mcp.server.stdio.stdio_server``'s streams, reading requests through ``_Requests``.
    As the SDK does for its own stdin, the wire is read from a duplicate of descriptor 0, which
    points at the null device meanwhile, so that no child process reads the client's bytes."""
    wire = os.dup(0)
    saved = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        with TextIOWrapper(os.fdopen(wire, "rb"), encoding="utf-8", errors="replace") as text:
            requests = _Requests(anyio.wrap_file(text))
            async with stdio_server(stdin=requests) as (read_stream, write_stream):  # type: ignore[arg-type]
                requests.answer_on(write_stream)
                yield read_stream, write_stream
    finally:
        os.dup2(saved, 0)
        os.close(saved)
