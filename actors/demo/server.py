"""The demo MCP server (official SDK, stdio): ``python -m actors.demo.server``.

Tools: ``echo``, ``add``, ``sleep``, ``now`` and ``crash`` (exits the process mid-call, to show
supervision at work).
"""

from __future__ import annotations

import datetime
import os

import anyio
from mcp.server.mcpserver import MCPServer

__all__ = ["build", "main"]


def build() -> MCPServer:
    server = MCPServer("mcp-actors-demo", instructions="A small server that ships with mcp-actors.")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text as it came."""
        return text

    @server.tool()
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Wait ``seconds`` (at most 60), then say so."""
        await anyio.sleep(min(max(seconds, 0.0), 60.0))
        return f"slept {seconds}s"

    @server.tool()
    def now() -> str:
        """The current time in UTC, ISO 8601."""
        return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")

    @server.tool()
    def crash() -> str:
        """Exit the server process at once (the supervisor restarts it)."""
        os._exit(1)

    return server


def main() -> None:
    build().run("stdio")


if __name__ == "__main__":
    main()
