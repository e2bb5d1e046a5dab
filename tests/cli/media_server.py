"""An MCP server (official SDK, stdio) whose answers hold every kind of content, for the command's
tests: ``python -m tests.cli.media_server``.

Tools: ``media`` (text, an image, audio, an embedded text resource, an embedded binary resource
and a resource link, in that order) and ``steps`` (reports progress, then answers). Resources:
``media://notes`` (text) and ``media://logo`` (binary), the template ``media://notes/{day}``.
Prompts: ``greet`` (argument ``name``, required) and ``show`` (a text message, then an image).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.mcpserver import Context, MCPServer

__all__ = ["AUDIO", "IMAGE", "LOGO", "build", "main"]

IMAGE = bytes(range(256)) * 5 + b"png"
"""1,283 bytes: ``[image image/png, 1.3 kB]``."""
AUDIO = b"RIFF" + bytes(3396)
"""3,400 bytes: ``[audio audio/wav, 3.4 kB]``."""
LOGO = b"\x89PNG\r\n\x1a\n" + bytes(92)
"""100 bytes: ``[resource media://logo image/png, 100 B]``."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def build() -> MCPServer:
    server = MCPServer("media")

    @server.tool()
    def media() -> list[types.ContentBlock]:
        """Every kind of content block, once."""
        return [
            types.TextContent(type="text", text="Here is everything:"),
            types.ImageContent(type="image", data=_b64(IMAGE), mime_type="image/png"),
            types.AudioContent(type="audio", data=_b64(AUDIO), mime_type="audio/wav"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///x", mime_type="text/plain", text="inline"),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="media://logo", mime_type="image/png", blob=_b64(LOGO)
                ),
            ),
            types.ResourceLink(type="resource_link", uri="file:///x", name="x"),
        ]

    @server.tool()
    async def steps(count: int, ctx: Context, wait_for: str = "") -> str:
        """Report ``count`` steps of progress, then answer; with ``wait_for`` (a path), wait after
        the first step until that file exists: the client has seen the step."""
        for step in range(1, count + 1):
            await ctx.report_progress(step, count, f"step {step}")
            if step == 1 and wait_for:
                with anyio.fail_after(60):
                    while not Path(wait_for).exists():
                        await anyio.sleep(0.01)
        return f"{count} steps done"

    @server.resource("media://notes", mime_type="text/plain", description="Plain notes")
    def notes() -> str:
        return "first note\nsecond note"

    @server.resource("media://logo", mime_type="image/png")
    def logo() -> bytes:
        return LOGO

    @server.resource("media://notes/{day}", mime_type="text/plain")
    def notes_of(day: str) -> str:
        return f"notes of {day}"

    @server.prompt(description="Greet someone")
    def greet(name: str) -> str:
        return f"Say hello to {name}."

    @server.prompt(description="A message with an image")
    def show() -> list[Any]:
        return [
            {"role": "user", "content": {"type": "text", "text": "Look at this:"}},
            {"role": "user", "content": {"type": "image", "data": _b64(IMAGE), "mimeType": "image/png"}},
        ]

    return server


def main() -> None:
    build().run("stdio")


if __name__ == "__main__":
    main()
