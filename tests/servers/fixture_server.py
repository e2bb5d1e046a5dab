"""A real MCP server built with the SDK's `MCPServer`, for the transport and runtime tests.

Run it as ``python -m tests.servers.fixture_server`` or as a script::

    fixture_server.py [--transport stdio|streamable-http|sse] [--port N]
                      [--extra-tools N] [--page-size N] [--name NAME] [--hold-stdout]

Tools: ``echo``, ``add``, ``sleep`` (records start and cancellation), ``fail`` (an isError
result), ``crash`` (the process exits mid-call), ``add_tool`` (registers a tool, then says the
list changed, in either protocol era), ``ask_client`` (sends the client an elicitation request),
``stderr`` (writes a line to stderr), ``header`` (echoes an HTTP request header), plus
``--extra-tools`` numbered tools. ``tools/list`` is paged by ``--page-size`` (0: one page).

``--hold-stdout`` starts a child that inherits stdout (so the pipe outlives the server) and
writes its pid to ``holder.pid``.

``sleep`` writes ``<id>.started`` and, when cancelled, ``<id>.cancelled`` into the folder named by
the environment variable ``FIXTURE_MARKER_DIR`` (when it is set).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ListToolsResult, PaginatedRequestParams
from pydantic import BaseModel

MODERN = "2026-07-28"


class PagedServer(MCPServer):
    """`MCPServer` with cursor paging of ``tools/list`` (the stock one lists everything at once)."""

    page_size = 0

    async def _handle_list_tools(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        tools = await self.list_tools()
        if self.page_size <= 0:
            return ListToolsResult(tools=tools)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + self.page_size
        return ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)


def _marker(name: str) -> Path | None:
    folder = os.environ.get("FIXTURE_MARKER_DIR")
    return Path(folder) / name if folder else None


def _touch(name: str) -> None:
    path = _marker(name)
    if path is not None:
        path.write_text(str(os.getpid()))


class Confirm(BaseModel):
    ok: bool


def _numbered(offset: int) -> Any:
    def numbered(x: int = 0) -> int:
        return x + offset

    return numbered


def build(name: str = "fixture", extra_tools: int = 0, page_size: int = 0) -> PagedServer:
    """The fixture server with its tools registered."""
    server = PagedServer(name, version="1.0.0", instructions="A fixture server for tests.")
    server.page_size = page_size

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def sleep(seconds: float, marker: str = "sleep") -> str:
        """Sleep, recording the start and any cancellation in FIXTURE_MARKER_DIR."""
        _touch(f"{marker}.started")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            _touch(f"{marker}.cancelled")
            raise
        return f"slept {seconds}"

    @server.tool()
    def fail(message: str) -> str:
        """Fail with the message (an isError result)."""
        raise ToolError(message)

    @server.tool()
    def crash() -> str:
        """Exit the process in the middle of the call."""
        print("fixture: crashing on request", file=sys.stderr, flush=True)
        os._exit(3)

    @server.tool()
    def stderr(text: str) -> str:
        """Write a line to stderr."""
        print(text, file=sys.stderr, flush=True)
        return "written"

    @server.tool()
    def header(name: str, ctx: Context) -> str:
        """The value of an HTTP request header ("" when absent or not on HTTP)."""
        headers = ctx.headers or {}
        return str(headers.get(name.lower(), headers.get(name, "")))

    @server.tool()
    async def add_tool(name: str, ctx: Context) -> str:
        """Register a new tool, then tell the client the tool list changed."""

        def added() -> str:
            return f"I am {name}"

        server.add_tool(added, name=name, description=f"Added at run time: {name}")
        if ctx.protocol_version == MODERN:
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @server.tool()
    async def ask_client(ctx: Context) -> str:
        """Ask the client for input (elicitation): a server-to-client request."""
        try:
            result = await ctx.elicit("Proceed?", Confirm)
        except Exception as exc:
            return f"client refused: {exc}"
        return f"client answered: {result.action}"

    for i in range(extra_tools):
        server.add_tool(_numbered(i), name=f"tool_{i:03d}", description=f"Numbered tool {i}")
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transport", choices=["stdio", "streamable-http", "sse"], default="stdio")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--extra-tools", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--name", default="fixture")
    parser.add_argument(
        "--hold-stdout",
        action="store_true",
        help="start a child that inherits stdout and outlives us (its pid goes to holder.pid)",
    )
    args = parser.parse_args(argv)
    if args.hold_stdout:
        holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        path = _marker("holder.pid")
        if path is not None:
            path.write_text(str(holder.pid))
    server = build(args.name, args.extra_tools, args.page_size)
    if args.transport == "stdio":
        server.run("stdio")
    elif args.transport == "sse":
        server.run("sse", host="127.0.0.1", port=args.port)
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
