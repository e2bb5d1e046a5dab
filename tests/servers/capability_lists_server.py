"""A server whose tool list depends on the client's capabilities, as the SDK's and the
reference everything-servers do: ``plain`` always; ``with_roots``, ``with_elicitation`` and
``with_sampling`` only to a client that declared that capability.

Run it as ``python -m tests.servers.capability_lists_server`` (stdio).
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ListToolsResult, PaginatedRequestParams

OFFERED = ("roots", "elicitation", "sampling")


class CapabilityListsServer(MCPServer):
    async def _handle_list_tools(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        capabilities = ctx.session.client_capabilities
        declared = {name for name in OFFERED if getattr(capabilities, name, None) is not None}
        tools = [
            tool
            for tool in await self.list_tools()
            if not tool.name.startswith("with_") or tool.name.removeprefix("with_") in declared
        ]
        return ListToolsResult(tools=tools)


def build() -> MCPServer:
    server = CapabilityListsServer("capability-lists")

    @server.tool()
    def plain() -> str:
        """Offered to every client."""
        return "plain"

    for name in OFFERED:

        def offered(capability: str = name) -> str:
            return f"offered with {capability}"

        server.tool(name=f"with_{name}", description=f"Offered only to a client that declares {name}.")(
            offered
        )
    return server


def main() -> None:
    build().run("stdio")


if __name__ == "__main__":
    main()
