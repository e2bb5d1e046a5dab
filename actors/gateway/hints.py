"""`CacheHints`: the caching hints (SEP-2549) of the gateway's own answers.

On 2026-07-28 sessions a ``tools/list``, ``prompts/list``, ``resources/list``,
``resources/templates/list`` or ``resources/read`` result carries ``ttlMs`` and ``cacheScope``.
The SDK fills ``0`` and ``private`` when a handler sets nothing; the gateway sets both itself,
from what it merged:

- ``ttlMs``: the freshness left of the backends' lists (the shortest TTL less its age, floored
  at 0; 0 if any backend gave no hint), or of the backend's read; 0 for the gateway's own
  views (the tool-search meta tools), which a reload may change;
- ``cacheScope``: ``public`` only when every backend said so and the answer does not depend on
  the caller: never when the gateway authenticates its clients (a bearer token), routes by
  per-user affinity (a cluster), or the request carried credentials of its own.

Handshake-era sessions get no hints (the keys mean nothing there). A multi round-trip request
of the gateway's own is never a cacheable one (its reads and lists take one round); a backend's
read that took rounds comes without a hint (`actors.mcp.sdk_transport.calls.read_resource`).
"""

from __future__ import annotations

from typing import Any

from actors.mcp.freshness import CACHE_HINT, ListFreshness
from actors.mcp.revisions import revision_of
from actors.runtime.messages import ListPrompts, ListResources, ListResourceTemplates, ListTools
from actors.tools import ToolResult

__all__ = ["OWN_VIEW", "CacheHints", "listed", "read"]

OWN_VIEW = ListFreshness(0, "public")
"""The hint of a view of the gateway's own (the same for everyone; a reload may change it)."""


class CacheHints:
    """The hints of one gateway's answers. Stateless after construction; used on the gateway's
    loop. ``per_caller``: the gateway's answers depend on who asks (see the module)."""

    def __init__(self, *, per_caller: bool) -> None:
        self._per_caller = per_caller

    def of(self, ctx: Any, freshness: ListFreshness | None) -> dict[str, Any]:
        """The result fields (``ttl_ms``, ``cache_scope``) for an answer of ``freshness``, asked
        by the request ``ctx``; none on a handshake-era session."""
        if not revision_of(getattr(ctx, "protocol_version", None)).cache_hints:
            return {}
        hint = freshness if freshness is not None else ListFreshness()
        public = hint.public and not self._per_caller and not _with_credentials(ctx)
        return {"ttl_ms": hint.ttl_ms, "cache_scope": "public" if public else "private"}


def listed(asked: ListTools | ListResources | ListResourceTemplates | ListPrompts) -> ListFreshness | None:
    """The freshness left of the registry's answer to ``asked`` (settled before its reply)."""
    slot = asked.freshness
    return slot.result() if slot.done() and not slot.cancelled() and slot.exception() is None else None


def read(result: ToolResult) -> ListFreshness | None:
    """The hint of a backend's read (`CACHE_HINT` in its metadata), if it gave one."""
    return ListFreshness.from_json(result.metadata.get(CACHE_HINT))


def _with_credentials(ctx: Any) -> bool:
    """Whether the request carried credentials of its own (an HTTP ``Authorization`` header)."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    return bool(headers is not None and headers.get("authorization"))
