"""SDK <-> plain data: the SDK's pydantic models to the seam's JSON and frozen dataclasses.

Everything above the transport sees `actors.mcp.transport`'s types only, never the SDK's
(classifying a failure or reading a result must not import the SDK on the loop). Pure
functions; safe on any thread.
"""

from __future__ import annotations

import mcp_types as types
import pydantic
from mcp import Client
from mcp.client.caching import MAX_TTL_MS

from actors.mcp.freshness import ListFreshness
from actors.mcp.revisions import revision_of
from actors.mcp.transport import (
    CallOutcome,
    JSONObject,
    RemoteTool,
    ServerInfo,
)

__all__ = [
    "freshness",
    "outcome",
    "remote_tool",
    "server_info",
    "to_json",
]

# Protocol bookkeeping in results (result type, cache hints), not part of the answer.
_BOOKKEEPING = {"result_type", "ttl_ms", "cache_scope"}


def to_json(model: pydantic.BaseModel) -> JSONObject:
    """An SDK object as MCP JSON, without the protocol's bookkeeping fields."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=_BOOKKEEPING)


def freshness(result: types.CacheableResult, protocol_version: str | None) -> ListFreshness | None:
    """The caching hint of one result (one page), as the SDK's own client cache reads it: on
    2026-07-28 sessions only (a handshake-era peer may put the keys on the wire too, and they
    mean nothing there), an absent ``ttlMs`` as 0, anything but ``public`` as private, the TTL
    capped at the SDK's 24 hours."""
    if not revision_of(protocol_version).cache_hints:
        return None
    ttl_ms = result.ttl_ms if "ttl_ms" in result.model_fields_set else 0
    return ListFreshness(min(ttl_ms, MAX_TTL_MS), "public" if result.cache_scope == "public" else "private")


def _optional_json(model: pydantic.BaseModel | None) -> JSONObject | None:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True) if model is not None else None


def outcome(result: types.CallToolResult) -> CallOutcome:
    """A ``tools/call`` result as the seam's `CallOutcome`."""
    return CallOutcome(
        content=[block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content],
        structured_content=result.structured_content,
        is_error=bool(result.is_error),
    )


def server_info(client: Client) -> ServerInfo:
    """What the handshake of ``client`` told us."""
    info = client.server_info
    return ServerInfo(
        name=info.name if info is not None else "",
        version=info.version if info is not None else "",
        protocol_version=client.protocol_version,
        capabilities=client.server_capabilities.model_dump(mode="json", by_alias=True, exclude_none=True),
        instructions=client.instructions,
    )


def remote_tool(tool: types.Tool) -> RemoteTool:
    return RemoteTool(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
        annotations=_optional_json(tool.annotations),
        task_support=tool.execution.task_support if tool.execution is not None else None,
        definition=to_json(tool),
    )
