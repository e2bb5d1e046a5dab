"""The benchmark MCP server (official SDK ``MCPServer``, stdio): ``echo`` and ``sleep``.

Run as a script (``python benchmarks/servers/bench_server.py``) so that every client under
test, ours and the peers in their own virtual environments, starts the very same server.
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer


def build() -> MCPServer:
    server = MCPServer("mcp-actors-bench")

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
    build().run("stdio")


if __name__ == "__main__":
    main()
