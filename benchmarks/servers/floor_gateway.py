"""The floor of a gateway on this runtime: the SDK's server, each call straight to the runtime.

``python benchmarks/servers/floor_gateway.py CONFIG``: serves one tool, ``bench__echo``, over
stdio (read and written on the loop, as ``mcp-actors serve`` does: `actors.gateway.pipes`) and
hands every call to the server actor of ``bench`` (`Dispatch.tell`), as the gateway's last stage
does. Nothing else of the gateway runs: no gate, audit, names, tasks, rounds or sessions. What
it costs over fastmcp's proxy in benchmarks/gateway_calls.py is what the architecture costs (the
SDK's server on one loop, the actor hop, the runtime's loop), which no gateway code can undercut.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, cast

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from actors import CallTool, Runtime
from actors.config import load_config
from actors.gateway.conversion import call_result
from actors.gateway.pipes import stdio_pipes

_TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def build(runtime: Runtime) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="bench__echo", input_schema=_TEXT)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        call = CallTool("bench", "echo", dict(params.arguments or {}))
        runtime.dispatch.tell(call)
        return call_result(await asyncio.wrap_future(call.reply))

    return Server("floor-gateway", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(server: Server[Any]) -> None:
    async with stdio_pipes() as pipes:
        stdin, stdout = pipes if pipes is not None else (None, None)
        async with stdio_server(cast(Any, stdin), cast(Any, stdout)) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def main() -> None:
    with Runtime.start(load_config(sys.argv[1])) as runtime:
        asyncio.run(serve(build(runtime)))


if __name__ == "__main__":
    main()
