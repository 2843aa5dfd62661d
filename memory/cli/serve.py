"""``dualmem mcp``: serve the home to one agent session over MCP (stdio)."""

from __future__ import annotations

import argparse

from memory.cli.base import Command, no_arguments
from memory.output import Output
from memory.store.config import Config


async def mcp(args: argparse.Namespace, config: Config) -> Output:
    # The SDK is imported here, not with the command group: only a server pays for it.
    from memory.mcp.server import serve

    await serve(config)
    return Output({}, "")


COMMANDS = {"mcp": Command(no_arguments, mcp)}
