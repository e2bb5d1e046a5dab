"""A stdio MCP server whose lists carry caching hints (SEP-2549), and that counts its lists.

``--ttl-ms N`` and ``--scope public|private`` are the hint of every cacheable result
(``tools/list``, the resource and prompt lists, ``resources/read``); ``--list-delay S`` makes
each ``tools/list`` take S seconds (so that asks can pile up while one is in flight);
``--no-listen`` serves no ``subscriptions/listen``, so on 2026-07-28 it declares no
``listChanged`` (it tells no list changes). The environment variable ``HINT_EXTRA_TOOL`` names
one more tool.

Tools: ``listed`` answers how many ``tools/list`` requests this process has served;
``add_tool`` adds a tool (by name) and says the tool list changed; ``set_hint`` changes the
hint of every cacheable result from now on. Resources: ``hint://value``; ``hint://asks/{topic}``,
whose read on 2026-07-28 first asks the client for a name (elicitation, key ``who``: an
``InputRequiredResult``), then greets it.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import anyio
from mcp.server.caching import CACHEABLE_METHODS, CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult, Tool


class CountingServer(MCPServer):
    """Counts the ``tools/list`` requests it answers."""

    listed = 0
    delay = 0.0

    async def list_tools(self) -> list[Tool]:
        type(self).listed += 1
        if self.delay:
            await anyio.sleep(self.delay)
        return await super().list_tools()


def build(ttl_ms: int, scope: str, delay: float, listen: bool = True) -> CountingServer:
    hint = CacheHint(ttl_ms, "public" if scope == "public" else "private")
    server = CountingServer("cache-hints", cache_hints=dict.fromkeys(CACHEABLE_METHODS, hint))
    server.delay = delay
    if not listen:
        # The SDK derives a 2026-07-28 server's listChanged from whether it serves listen.
        server._lowlevel_server._request_handlers.pop("subscriptions/listen", None)

    @server.tool()
    def listed() -> int:
        """How many tools/list requests this process has served."""
        return CountingServer.listed

    @server.tool()
    async def add_tool(name: str, ctx: Context) -> str:
        """Add a tool called ``name`` and say the tool list changed."""

        def added() -> str:
            return name

        server.add_tool(added, name=name, description=f"added as {name}")
        await ctx.notify_tools_changed()
        return f"added {name}"

    @server.tool()
    def set_hint(ttl_ms: int, scope: str) -> dict[str, Any]:
        """Give every cacheable result this hint from now on."""
        changed = CacheHint(ttl_ms, "public" if scope == "public" else "private")
        hints = server._lowlevel_server.cache_hints  # the low-level server's own table
        for method in CACHEABLE_METHODS:
            hints[method] = changed
        return {"ttlMs": ttl_ms, "cacheScope": changed.scope}

    @server.resource("hint://value")
    def value() -> str:
        """A resource whose read carries the hint."""
        return "the value"

    @server.resource("hint://asks/{topic}")
    def asks(topic: str, ctx: Context) -> str | InputRequiredResult:
        """Asks who is reading (one round), then greets them."""
        answer = (ctx.input_responses or {}).get("who")
        if isinstance(answer, ElicitResult) and answer.content:
            return f"hello {answer.content.get('name')}, about {topic}"
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        question = ElicitRequest(
            params=ElicitRequestFormParams(message="Who reads?", requested_schema=schema)
        )
        return InputRequiredResult(input_requests={"who": question})

    extra = os.environ.get("HINT_EXTRA_TOOL")
    if extra:

        def extra_tool() -> str:
            return extra

        server.add_tool(extra_tool, name=extra, description="named by HINT_EXTRA_TOOL")
    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ttl-ms", type=int, default=0)
    parser.add_argument("--scope", default="private")
    parser.add_argument("--list-delay", type=float, default=0.0)
    parser.add_argument("--no-listen", action="store_true")
    args = parser.parse_args()
    build(args.ttl_ms, args.scope, args.list_delay, listen=not args.no_listen).run("stdio")
