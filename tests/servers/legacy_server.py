"""A handshake-era-only stdio server that ignores ``server/discover``, like many pre-2026 servers.

Built on the SDK's low-level ``Server`` served by ``serve_loop`` (handshake era only); the one
twist is a read-stream filter that drops ``server/discover`` requests unanswered, so a client in
``auto`` mode waits out its discovery timeout before falling back to ``initialize``.
Tool: ``echo(text)``.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage


class DropDiscover:
    """A read stream that hides ``server/discover`` requests from the server."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item: SessionMessage | Exception = await self._inner.receive()
            message = item.message if isinstance(item, SessionMessage) else None
            if isinstance(message, types.JSONRPCRequest) and message.method == "server/discover":
                continue
            return item

    def __aiter__(self) -> DropDiscover:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> DropDiscover:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    echo = types.Tool(name="echo", description="Echo the text.", input_schema=schema)
    return types.ListToolsResult(tools=[echo])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    text = str((params.arguments or {}).get("text", ""))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server: Server[Any] = Server("legacy", version="0.9.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve() -> None:
    async with stdio_server() as (read_stream, write_stream), server.lifespan(server) as state:
        await serve_loop(
            server,
            DropDiscover(read_stream),
            write_stream,
            lifespan_state=state,
            init_options=server.create_initialization_options(),
        )


def main() -> None:
    anyio.run(serve)


if __name__ == "__main__":
    main()
