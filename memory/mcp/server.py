"""The MCP server: ``MemoryTools`` published with the official SDK, served over stdio.

Tools fail as MCP tool errors carrying our one-line message (``Error executing tool NAME:
MESSAGE``), never a traceback. Resources: ``dualmem://project/patterns.md`` and
``dualmem://project/gotchas.md`` for this home's project, and
``dualmem://groups/{group}/patterns.md`` (and ``gotchas.md``) for any group.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

from backends.errors import DualmemError
from backends.model import problems
from memory.about import version
from memory.curation.operations import Curator
from memory.mcp.curation import CurationTools
from memory.mcp.stdio import stdio_streams
from memory.mcp.tools import VIEWS, MemoryTools
from memory.output import one_line
from memory.store.area_guess import area_guesser
from memory.store.config import Config
from memory.store.home import require_home
from memory.store.selection import open_backend

INSTRUCTIONS = """\
This server is the project's memory, shared by every session of the project. Before a task,
call get_task_context (or search_memories) to learn what earlier sessions found; when you learn
something worth keeping (a gotcha, a pattern, what a file is for, a decision, how a task went),
call add_memory; at the end of a session, call save_session_insights. When a memory is wrong
or stale, correct it (update_memory), forget it (forget_memory), or supersede a decision
(supersede_decision); memory_history shows what it was."""


def _message(exc: Exception) -> str:
    return problems(exc) if isinstance(exc, ValidationError) else one_line(exc)


def _as_tool(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """``method`` with our errors turned into tool errors (the model reads the message)."""

    @functools.wraps(method)
    async def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return await method(*args, **kwargs)
        except (DualmemError, ValidationError) as exc:
            raise ToolError(_message(exc)) from None

    return call


class _Server(MCPServer[Any]):
    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            # The SDK reports arguments that fail the schema as pydantic's many-line text.
            if isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                raise ToolError(f"Error executing tool {name}: {problems(cause)}") from cause
            raise

    async def run_stdio_async(self) -> None:
        """The SDK's own, over ``stdio_streams``: a request holding text that is not Unicode is
        answered with an error instead of dropped (the SDK offers no other seam for it)."""
        async with stdio_streams() as (read_stream, write_stream):
            await self._lowlevel_server.run(
                read_stream, write_stream, self._lowlevel_server.create_initialization_options())


def build_server(tools: MemoryTools, curation: CurationTools) -> MCPServer[Any]:
    server = _Server("dualmem", instructions=INSTRUCTIONS, log_level="WARNING",
                     version=version())
    for method in (*tools.tools(), *curation.tools()):
        server.add_tool(_as_tool(method))
    for page in VIEWS:
        _publish_views(server, tools, page)
    return server


def _publish_views(server: MCPServer[Any], tools: MemoryTools, page: str) -> None:
    what = "patterns" if page == "patterns.md" else "gotchas and failed approaches"

    async def read(group: str) -> str:
        try:
            return await tools.view(group, page)
        except DualmemError as exc:
            raise ResourceError(_message(exc)) from None

    async def project_view() -> str:
        return await read(tools.project_id)

    async def group_view(group: str) -> str:
        return await read(group)

    server.resource(f"dualmem://project/{page}", name=f"project-{page}",
                    description=f"This project's {what}, as Markdown.",
                    mime_type="text/markdown")(project_view)
    server.resource(f"dualmem://groups/{{group}}/{page}", name=f"group-{page}",
                    description=f"A group's {what}, as Markdown (a project's group is its id).",
                    mime_type="text/markdown")(group_view)


async def serve(config: Config) -> None:
    """Serve ``config.home`` over stdin/stdout until the client closes stdin; the store is
    opened once and closed on the way out. (A SIGTERM ends the process at once, which loses
    nothing: every write the server acknowledged was durable before it said so.)"""
    require_home(config.home)
    store, _ = await open_backend(config)
    try:
        tools = MemoryTools(store, config.home, guess_areas=area_guesser(config))
        # Through the tools' cache, which a write drops, as any write of theirs does.
        curator = Curator(tools.store, tools.project_id, config.files_dir, layer=store)
        await build_server(tools, CurationTools(curator)).run_stdio_async()
    finally:
        await store.aclose()
