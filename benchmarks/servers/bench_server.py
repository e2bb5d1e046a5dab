"""The benchmark MCP server (official SDK ``MCPServer``, stdio): ``echo`` and ``sleep``.

``python benchmarks/servers/bench_server.py http PORT`` serves the same tools over Streamable
HTTP: the direct reference of benchmarks/gateway_load.py.

Run as a script (``python benchmarks/servers/bench_server.py``) so that every client under
test, ours and the peers in their own virtual environments, starts the very same server.
"""

from __future__ import annotations

import sys
from typing import Literal

import anyio
from mcp.server.mcpserver import MCPServer


def build(log_level: Literal["INFO", "WARNING"] = "INFO") -> MCPServer:
    server = MCPServer("mcp-actors-bench", log_level=log_level)

    @server.tool()
    def echo(text: str) -> str:
        """Return the text as it came."""
        return text

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Wait ``seconds`` (at most 60), then say so."""
        await anyio.sleep(min(max(seconds, 0.0), 60.0))
        return f"slept {seconds}s"

    return server


def main() -> None:
    if sys.argv[1:2] == ["http"]:
        build("WARNING").run("streamable-http", port=int(sys.argv[2]))
    else:
        build().run("stdio")


if __name__ == "__main__":
    main()
