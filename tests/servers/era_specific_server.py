"""A dual-era server whose tools ask for input the handshake-era way only, as the SDK's own
reference server (its ``everything-server``) does.

tests/servers/everything_server.py asks through the SDK's resolvers, which work in either era.
Many real servers do not: they call the session's back-channel (``ctx.session.create_message``,
``ctx.elicit``, ``ctx.session.list_roots``, log messages on the session). Those calls work
only on a handshake-era session; a 2026-07-28 request has no back-channel, and the tool fails.
This server is everything_server with its sampling and elicitation tools written that way, plus
``test_list_roots``. It speaks both eras, so a client that goes direct in the handshake era gets
everything (tests/conformance/test_reference_server.py runs the 2025-11-25 set against it); a
gateway in front of it must give a handshake-era client as much.

Run it as ``python -m tests.servers.era_specific_server [--transport stdio|streamable-http]
[--port N]``.
"""

from __future__ import annotations

import argparse
import warnings

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import SamplingMessage, TextContent

from tests.servers import everything_server
from tests.servers.everything_server import Defaults, Enums, Reply

BACK_CHANNEL_TOOLS = (
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
)
"""everything_server's tools this server replaces with back-channel ones."""


def build() -> MCPServer:
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    server = everything_server.build()
    for name in BACK_CHANNEL_TOOLS:
        server.remove_tool(name)

    @server.tool()
    async def test_sampling(prompt: str, ctx: Context) -> str:
        """Asks the client's model, on the session."""
        try:
            result = await ctx.session.create_message(
                [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
                max_tokens=100,
                related_request_id=ctx.request_id,
            )
        except Exception as exc:  # what the suite reads: the reason, in the answer
            return f"Sampling not supported or error: {exc}"
        content = result.content
        return f"LLM response: {content.text if isinstance(content, TextContent) else 'No response'}"

    @server.tool()
    async def test_elicitation(message: str, ctx: Context) -> str:
        """Asks the client's user for a response, on the session."""
        try:
            answer = await ctx.elicit(message=message, schema=Reply)
        except Exception as exc:
            return f"Elicitation not supported or error: {exc}"
        return everything_server.elicited(answer, "User response")

    @server.tool()
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        """Asks with a default for every primitive type, on the session."""
        try:
            answer = await ctx.elicit(message="Please provide user information", schema=Defaults)
        except Exception as exc:
            return f"Elicitation not supported or error: {exc}"
        return everything_server.elicited(answer, "Elicitation result")

    @server.tool()
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        """Asks with every kind of enum, on the session."""
        try:
            answer = await ctx.elicit(
                message="Please select values using different enum schema types", schema=Enums
            )
        except Exception as exc:
            return f"Elicitation not supported or error: {exc}"
        return everything_server.elicited(answer, "Elicitation completed")

    @server.tool()
    async def test_list_roots(ctx: Context) -> str:
        """Asks the client for its roots, on the session; answers with their URIs."""
        try:
            result = await ctx.session.list_roots()
        except Exception as exc:
            return f"Roots not supported or error: {exc}"
        return "roots: " + ", ".join(str(root.uri) for root in result.roots)

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    server = build()
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
