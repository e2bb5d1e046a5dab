"""A real MCP server built with the SDK's `MCPServer`, for the agent-framework adapter tests.

Run it as ``python -m tests.servers.agent_server [--name NAME]`` (stdio).

Its tools cover what an adapter must carry to a model and back:

- ``forecast(city, units)``: structured output (an output schema and ``structuredContent``)
  beside its text; ``units`` is an enum with a default.
- ``plan(trip)``: an input schema with ``$defs`` (a nested model, a list of them).
- ``pixel()``: an image (a 1x1 PNG).
- ``document()``: an embedded text resource and a resource link.
- ``boom(message)``: a tool error (``isError``) with the message.
- ``whoami()``: the server's name and process id (a test kills the process by it).
- ``count(steps)``: reports progress ``steps`` times, then answers ``counted N``.
- ``wait(seconds)``: sleeps; writes ``<name>.wait.started`` and, when cancelled,
  ``<name>.wait.cancelled`` into the folder named by ``AGENT_MARKER_DIR`` (when set).
- ``grow(tool)``: registers a tool named ``tool`` (answering ``I am <tool>``) and tells the
  client the tool list changed, in either protocol era.
"""

from __future__ import annotations

import argparse
import base64
import os
from pathlib import Path
from typing import Literal

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import EmbeddedResource, ResourceLink, TextContent, TextResourceContents
from pydantic import BaseModel, Field

MODERN = "2026-07-28"

PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
)
"""The 1x1 PNG that ``pixel`` answers with."""

DOCUMENT_URI = "agent://notes/readme"
DOCUMENT_TEXT = "The notes say: bring an umbrella."
LINK_URI = "agent://notes/archive"


class Forecast(BaseModel):
    city: str
    temperature: float
    units: Literal["c", "f"]
    summary: str


class Stop(BaseModel):
    city: str = Field(description="Where to stop.")
    nights: int = Field(ge=1, description="How many nights.")


class Trip(BaseModel):
    traveller: str
    stops: list[Stop] = Field(min_length=1)


def _marker(name: str) -> Path | None:
    folder = os.environ.get("AGENT_MARKER_DIR")
    return Path(folder) / name if folder else None


def _touch(name: str) -> None:
    if (path := _marker(name)) is not None:
        path.touch()


def build(name: str = "agent") -> MCPServer:
    """The agent server with its tools registered."""
    server = MCPServer(name, version="1.0.0", instructions="An agent-adapter test server.")

    @server.tool()
    def forecast(city: str, units: Literal["c", "f"] = "c") -> Forecast:
        """Tomorrow's weather for a city."""
        temperature = 21.5 if units == "c" else 70.7
        return Forecast(city=city, temperature=temperature, units=units, summary=f"Sunny in {city}")

    @server.tool()
    def plan(trip: Trip) -> str:
        """Plan a trip: its stops and nights."""
        nights = sum(stop.nights for stop in trip.stops)
        route = " -> ".join(stop.city for stop in trip.stops)
        return f"{trip.traveller}: {route}, {nights} nights"

    @server.tool()
    def pixel() -> Image:
        """A tiny picture."""
        return Image(data=PIXEL_PNG, format="png")

    @server.tool()
    def document() -> list[TextContent | EmbeddedResource | ResourceLink]:
        """The notes, embedded, and a link to the archive."""
        return [
            TextContent(type="text", text="Here are the notes."),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri=DOCUMENT_URI, mime_type="text/plain", text=DOCUMENT_TEXT),
            ),
            ResourceLink(type="resource_link", uri=LINK_URI, name="archive", mime_type="text/plain"),
        ]

    @server.tool()
    def boom(message: str) -> str:
        """Fail with the message (a tool error)."""
        raise ToolError(message)

    @server.tool()
    def whoami() -> str:
        """The server's name and process id: ``NAME PID``."""
        return f"{name} {os.getpid()}"

    @server.tool()
    async def count(steps: int, ctx: Context) -> str:
        """Report progress ``steps`` times, then answer."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
        return f"counted {steps}"

    @server.tool()
    async def wait(seconds: float) -> str:
        """Sleep (marking its start and its cancellation)."""
        _touch(f"{name}.wait.started")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            _touch(f"{name}.wait.cancelled")
            raise
        return f"waited {seconds}"

    @server.tool()
    async def grow(tool: str, ctx: Context) -> str:
        """Register a tool named ``tool``, then say the tool list changed."""

        def added() -> str:
            return f"I am {tool}"

        server.add_tool(added, name=tool, description=f"Grown at run time: {tool}")
        if ctx.protocol_version == MODERN:
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
        return f"grew {tool}"

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", default="agent")
    args = parser.parse_args(argv)
    build(args.name).run("stdio")


if __name__ == "__main__":
    main()
