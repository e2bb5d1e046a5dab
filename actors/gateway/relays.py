"""`ClientRelay`: what a request's owner replica says while it serves it, to the client here.

When a request is forwarded to the replica that runs its server (`actors.cluster.affinity`), the
owner's log messages and progress come back on the forwarded request; the relay sends them to the
client on the request they are for, before the answer, as the gateway does for a server of its
own. It also tells the forwarder what the client declared (its capabilities, its log level), so
that the owner serves the forwarded request as it would serve the client. Run on the gateway's
loop; it holds no state but what it was made with.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, cast, get_args

import mcp_types as types
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import LOG_LEVEL_META_KEY

from actors.gateway.rounds import declared
from actors.mcp.revisions import revision_of

__all__ = ["ClientRelay"]

_LEVELS = frozenset(get_args(types.LoggingLevel))


class ClientRelay:
    """The relay for the request ``ctx``; its log messages go to ``target()`` (default: ``ctx``
    itself), the request its client is waiting on now (a request held across rounds is waited
    on by each round's retry in turn; None between rounds)."""

    def __init__(self, ctx: Any, target: Callable[[], Any] | None = None) -> None:
        self._ctx = ctx
        self._target = target if target is not None else (lambda: ctx)
        self.capabilities: Mapping[str, Any] = declared(ctx)
        meta = ctx.meta if isinstance(ctx.meta, Mapping) else {}
        self._token = meta.get("progress_token")
        self.log_level: types.LoggingLevel | None = _log_level(ctx, meta)

    @property
    def reports_progress(self) -> bool:
        return self._token is not None

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        ctx = self._target()
        if ctx is None:
            return
        with warnings.catch_warnings():
            # Deprecated on 2026-07-28 sessions, where the SDK sends it only if the client asked
            # for logs on that request: still the way to pass a server's log on.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await ctx.session.send_log_message(
                params.level, params.data, logger=params.logger, related_request_id=ctx.request_id
            )

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self._token is None:
            return
        await self._ctx.session.send_progress_notification(
            self._token, progress, total, message, related_request_id=str(self._ctx.request_id)
        )


def _log_level(ctx: Any, meta: Mapping[str, Any]) -> types.LoggingLevel | None:
    """The lowest level the client takes on this request: a 2026-07-28 request's opt-in, else
    every level (a handshake-era client filters with ``logging/setLevel``, here as for any
    server's messages)."""
    if not revision_of(getattr(ctx, "protocol_version", None)).log_level_per_request:
        return "debug"
    requested = meta.get(LOG_LEVEL_META_KEY)
    return cast(types.LoggingLevel, requested) if requested in _LEVELS else None
