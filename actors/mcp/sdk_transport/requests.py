"""SessionRequests under death watch: each one fails at once when the peer dies, or at its timeout.

Every request runs in a cancel scope of its own whose deadline is its timeout; the scopes of the
requests in flight are kept so that the peer's death (`PeerWatch`, through the composition's
``on_stop`` hook) cancels them all at once, and the request then raises ``ConnectionError``
with the session's reason (or `AuthError` when a refusal ended it). The SDK tells the server
(``notifications/cancelled``) when an awaiting request is cancelled, so a timeout leaves the
session usable. The SDK's errors become the seam's: `ServerReplyError`, ``TimeoutError``.

Owned by the event-loop thread (requests arrive there through `EventLoop.submit`).
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, TypeVar

import anyio
import httpx2
import mcp_types as types
import pydantic
from mcp import Client
from mcp.shared.exceptions import MCPError

from actors.mcp.revisions import Liveness
from actors.mcp.sdk_transport.failures import is_connection_error, validation_text
from actors.mcp.sdk_transport.peer import PeerWatch
from actors.mcp.transport import ServerReplyError

__all__ = ["SessionRequests"]

logger = logging.getLogger(__name__)

_MAX_PAGES: Final = 1000

_T = TypeVar("_T")


class SessionRequests:
    """The requests of one session, each bounded and watched."""

    def __init__(self, label: str, watch: PeerWatch) -> None:
        self._label = label
        self._watch = watch
        self._inflight: set[anyio.CancelScope] = set()

    def cancel_all(self) -> None:
        """The session is ending: every request in flight ends now (and says why)."""
        for scope in list(self._inflight):
            scope.cancel()

    async def run(self, what: str, send: Callable[[], Awaitable[_T]], timeout: float | None) -> _T:
        """``send()`` under the session's death watch and ``timeout``."""
        # One scope serves both: `cancel_all` cancels it when the peer is lost, and its deadline
        # is the timeout (an anyio scope costs ~5-10 us to enter and leave).
        deadline = anyio.current_time() + timeout if timeout is not None else math.inf
        scope = anyio.CancelScope(deadline=deadline)
        cause: BaseException | None = None
        self._inflight.add(scope)
        try:
            with scope:
                try:
                    return await send()
                except MCPError as exc:
                    if exc.code == types.REQUEST_TIMEOUT:
                        raise TimeoutError(f"{self._label}: {what} timed out: {exc.message}") from exc
                    if not is_connection_error(exc):
                        raise ServerReplyError(exc.message, exc.code, exc.error.data) from exc
                    cause = exc
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, httpx2.TransportError) as exc:
                    cause = exc
                except pydantic.ValidationError as exc:
                    raise ServerReplyError(
                        f"the server's answer to {what} is malformed: {validation_text(exc)}",
                        types.INTERNAL_ERROR,
                    ) from exc
        finally:
            self._inflight.discard(scope)
        if scope.cancelled_caught and anyio.current_time() >= deadline:
            raise TimeoutError(
                f"{self._label}: {what} got no answer within {timeout}s (the server was told to cancel it)"
            )
        refusal = self._watch.auth_error
        if refusal is not None:
            # The session ended because the server refused its credentials: say so, as `auth`.
            raise copy.copy(refusal) from cause
        # Cut off by the SDK, or cancelled because the peer was lost or closed: the watch says why.
        raise ConnectionError(await self._watch.wait_reason(what, cause)) from cause

    async def paged(
        self,
        what: str,
        page: Callable[[str | None], Awaitable[tuple[Sequence[_T], str | None]]],
        timeout: float | None,
    ) -> list[_T]:
        """Every item of a paged list, under one `run`."""

        async def fetch() -> list[_T]:
            items: list[_T] = []
            cursor: str | None = None
            seen: set[str] = set()
            for _ in range(_MAX_PAGES):
                batch, cursor = await page(cursor)
                items.extend(batch)
                if not cursor:
                    return items
                if cursor in seen:
                    raise RuntimeError(f"{self._label}: {what} repeated the cursor {cursor!r}")
                seen.add(cursor)
            raise RuntimeError(f"{self._label}: {what} has more than {_MAX_PAGES} pages")

        return await self.run(what, fetch, timeout)

    async def probe(self, client: Client, liveness: Liveness, *, timeout: float | None) -> None:
        """``ping`` (handshake era) or ``server/discover`` (2026-07-28), by the session's
        revision; any answer, even an error, proves the server alive."""

        async def ask() -> None:
            try:
                if liveness is Liveness.DISCOVER:
                    await client.session.send_discover(client.protocol_version)
                else:
                    await client.session.send_ping()
            except MCPError as exc:
                if is_connection_error(exc) or exc.code == types.REQUEST_TIMEOUT:
                    raise
                logger.debug("%s: probe answered with an error (alive): %s", self._label, exc)

        await self.run(liveness.value, ask, timeout)
