"""A dual-era stdio server whose tool breaks its own output schema, for the output checks.

Built on the SDK's low-level ``Server`` (``MCPServer`` would check its own output). Tools:

- ``count(n)``: declares ``{"n": integer}`` as its output and answers ``{"n": n}``: honest.
- ``lie(n)``: declares the same output and answers ``{"n": "<n>"}`` (a string): a lie.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

_INPUT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
_OUTPUT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name=name, input_schema=_INPUT, output_schema=_OUTPUT, description=f"{name} n")
            for name in ("count", "lie")
        ]
    )


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    n = int((params.arguments or {}).get("n", 0))
    structured: dict[str, Any] = {"n": n} if params.name == "count" else {"n": str(n)}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=str(n))], structured_content=structured
    )


server: Server[Any] = Server("lying", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main() -> None:
    anyio.run(serve)


if __name__ == "__main__":
    main()
