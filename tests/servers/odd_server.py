"""A handshake-era stdio server whose tool list is partly unusable, for the bad-server-data tests.

Built on the SDK's low-level ``Server`` (which, unlike ``MCPServer``, lists whatever it is
given). Tools:

- ``echo(text)``: a good tool.
- ``oops/``: a name no client can use (``/`` is the runtime's namespace separator).
- ``refd(x)``: an input schema whose ``$ref`` points nowhere.
- ``changed(times)``: sends ``notifications/tools/list_changed`` ``times`` times in a row.
- ``lists()``: ``"<answered> <most at once>"``: how many ``tools/list`` requests this process
  has answered, and the most it ever had in hand at the same time (each takes 20 ms).
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

_TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
_TIMES = {"type": "object", "properties": {"times": {"type": "integer"}}, "required": ["times"]}
_DANGLING = {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}, "required": ["x"]}

listed = 0
listing = 0
most_at_once = 0


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    global listed, listing, most_at_once
    listing += 1
    most_at_once = max(most_at_once, listing)
    try:
        await anyio.sleep(0.02)
    finally:
        listing -= 1
    listed += 1
    return types.ListToolsResult(
        tools=[
            types.Tool(name="echo", description="Echo the text.", input_schema=_TEXT),
            types.Tool(name="oops/", description="An unusable name.", input_schema={"type": "object"}),
            types.Tool(name="refd", description="A dangling $ref.", input_schema=_DANGLING),
            types.Tool(name="changed", description="Say the list changed.", input_schema=_TIMES),
            types.Tool(name="lists", description="tools/list count.", input_schema={"type": "object"}),
        ]
    )


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "changed":
        for _ in range(int(arguments.get("times", 1))):
            await ctx.session.send_tool_list_changed()
        text = "sent"
    elif params.name == "lists":
        text = f"{listed} {most_at_once}"
    else:
        text = str(arguments.get("text", arguments))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server: Server[Any] = Server("odd", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve() -> None:
    async with stdio_server() as (read_stream, write_stream), server.lifespan(server) as state:
        await serve_loop(
            server,
            read_stream,
            write_stream,
            lifespan_state=state,
            init_options=server.create_initialization_options(),
        )


def main() -> None:
    anyio.run(serve)


if __name__ == "__main__":
    main()
