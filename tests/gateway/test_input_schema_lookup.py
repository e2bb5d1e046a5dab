"""The gateway's server gives the SDK a direct input-schema lookup for a 2026-07-28 call's
``Mcp-Param-*`` check only while that is right for every caller (no policy, no per-user
server); otherwise the SDK runs the caller's own ``tools/list``, scoped by the policy."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from actors.gateway.server import Handlers, build_server


async def _nothing(ctx: Any, params: Any) -> None:
    return None


def test_the_lookup_is_offered_only_while_direct() -> None:
    direct = [True]

    def schema(name: str) -> dict[str, Any] | None:
        return {"type": "object"} if name == "fx__echo" else None

    handlers = Handlers(**{f.name: _nothing for f in fields(Handlers)})
    server = build_server(handlers, input_schema=schema, direct=lambda: direct[0])
    lookup = server.get_tool_input_schema
    assert lookup is schema and lookup("fx__echo") == {"type": "object"}
    direct[0] = False  # a policy came in with a reload, say
    assert server.get_tool_input_schema is None


def test_without_a_lookup_the_sdk_lists() -> None:
    server = build_server(Handlers(**{f.name: _nothing for f in fields(Handlers)}), direct=lambda: True)
    assert server.get_tool_input_schema is None
