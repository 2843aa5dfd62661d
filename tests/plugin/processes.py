"""dualmem as real processes running this checkout's code: commands, and ``dualmem mcp``
servers driven by the official SDK's client over stdio."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, TextContent

REPO = Path(__file__).resolve().parents[2]


def _python_path() -> str:
    return os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))


def dualmem(*argv: str, stdin: bytes = b"", cwd: Path = REPO) -> subprocess.CompletedProcess[bytes]:
    """``python -m memory ARGV``, with no DUALMEM_* setting inherited."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUALMEM_")}
    return subprocess.run([sys.executable, "-m", "memory", *argv], input=stdin, cwd=cwd,
                          env=env | {"PYTHONPATH": _python_path()}, capture_output=True,
                          timeout=120, check=False)


def server_parameters(home: Path, backend: str) -> StdioServerParameters:
    """``python -m memory mcp`` on ``home``."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory", "--home", str(home), "--backend", backend, "mcp"],
        env={**os.environ, "PYTHONPATH": _python_path()},
        cwd=str(REPO),
    )


@asynccontextmanager
async def servers(home: Path, backend: str, count: int) -> AsyncIterator[list[Client]]:
    """``count`` servers on one home, each with its own connected client (as Claude Code,
    which speaks the initialize handshake, connects)."""
    async with AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(
                Client(server_parameters(home, backend), mode="legacy", read_timeout_seconds=120)
            )
            for _ in range(count)
        ]


def text_of(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    """The structured result of a tool call that must succeed."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    if result.structured_content is None:
        return orjson.loads(text_of(result)) if text_of(result) else None
    content = result.structured_content
    return content["result"] if set(content) == {"result"} else content
