"""An SDK stdio server for oversized payloads: ``blob`` answers with ``size`` bytes of text.

Tools: ``blob(size)`` (a text block of ``size`` characters), ``blob_structured(size)`` (the
same as structured content too, so the payload travels twice), ``length(text)`` (the length
of a possibly huge argument) and ``echo``.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer


def build() -> MCPServer:
    server = MCPServer("big", version="1.0.0")

    @server.tool()
    def blob(size: int) -> str:
        """Return ``size`` characters of text."""
        return "x" * size

    @server.tool()
    def blob_structured(size: int) -> dict[str, str]:
        """Return ``size`` characters of text as structured content."""
        return {"data": "y" * size}

    @server.tool()
    def length(text: str) -> int:
        """Return the length of ``text``."""
        return len(text)

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    return server


def main() -> None:
    build().run("stdio")


if __name__ == "__main__":
    main()
