"""Forwarding: what a backend says or asks while it serves a client's request, to that client.

Its log messages (`ServerLogs`, a logging handler on ``actors.server``), its progress, and the
server requests (sampling, elicitation, roots) that no request's own `ClientInputs` answers
(`actors.gateway.client_inputs`), which go to the oldest request it is serving. They arrive on
the runtime's host thread; each is handed to the gateway's loop, which alone knows which client
is being served by whom."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar, cast

import mcp_types as types
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPDeprecationWarning

from actors.gateway.handoff import LoopHandoff
from actors.gateway.sessions import InFlight, Sessions
from actors.mcp.meta_keys import FORWARDED_CALL

__all__ = ["Forwarding", "ServerLogs"]

_T = TypeVar("_T")

_FORWARD_TIMEOUT = 120.0

_LOG_LEVELS = frozenset(("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"))

SERVER_LOGS = logging.getLogger("actors.server")
"""Where the runtime logs the servers' own log messages (``actors.server.<namespace>``)."""


class Forwarding:
    """A backend's logs, progress and server requests, to the client it is serving.

    Entered on the runtime's host thread; holds no state: the `Sessions` it reads are the
    loop's, so every look-up runs on the loop (handed over with `LoopHandoff`).
    """

    def __init__(self, sessions: Sessions, handoff: LoopHandoff) -> None:
        self._sessions = sessions
        self._handoff = handoff

    # ---- log messages ------------------------------------------------------------------------

    def log(self, namespace: str, level: str, source: str | None, data: Any) -> None:
        """A backend's log message (on the host thread), for each client it is serving."""
        if level in _LOG_LEVELS:
            self._handoff.call(self._log_on_loop, namespace, level, source, data)

    def _log_on_loop(self, namespace: str, level: str, source: str | None, data: Any) -> None:
        for client in self._sessions.waiting_on(namespace):
            if client.tag is not None:
                message = _tagged_log(client, level, source, data)
                if message is None:
                    continue
            else:
                send = client.session.send_log_message
                with warnings.catch_warnings():
                    # Deprecated on 2026-07-28 sessions, where the SDK sends it only if the client
                    # asked for logs on that request: still the way to pass a server's log on.
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    related = client.request_id
                    message = send(cast(Any, level), data, logger=source, related_request_id=related)
            client.sent.append(self._handoff.start(message))

    # ---- progress ----------------------------------------------------------------------------

    def progress_sender(self, ctx: Any, token: Any) -> Callable[[float, float | None, str | None], None]:
        """What reports a call's progress to the client of ``ctx`` (called on the host thread)."""
        session, request_id = ctx.session, ctx.request_id

        def progress(done: float, total: float | None, message: str | None) -> None:
            # Handed to the gateway's loop, in order.
            self._handoff.call(self._progress_on_loop, session, request_id, token, done, total, message)

        return progress

    def _progress_on_loop(
        self, session: Any, request_id: Any, token: Any, done: float, total: float | None, message: str | None
    ) -> None:
        notification = session.send_progress_notification(
            token, done, total, message, related_request_id=str(request_id)
        )
        sent = self._handoff.start(notification)
        request = self._sessions.serving(session, request_id)
        if request is not None:
            request.sent.append(sent)  # the answer waits for it (`actors.gateway.routing`)

    # ---- server requests ---------------------------------------------------------------------

    def _ask_client(self, namespace: str, make: Callable[[ServerSession], Awaitable[_T]]) -> _T:
        """On the host thread: the request goes out on the gateway's loop; we wait here."""

        async def on_loop() -> _T:
            waiting = [request for request in self._sessions.waiting_on(namespace) if request.asks]
            if not waiting:
                raise RuntimeError(f"no client request of the gateway is being served by {namespace!r}")
            # The oldest request still in flight on that server is the one its server request is for.
            return await make(waiting[0].session)

        return self._handoff.run(on_loop(), _FORWARD_TIMEOUT)

    def sampling(self, namespace: str, params: dict[str, Any]) -> dict[str, Any]:
        request = types.CreateMessageRequestParams.model_validate(params)

        async def send(session: ServerSession) -> dict[str, Any]:
            result = await session.send_request(
                types.CreateMessageRequest(params=request), types.CreateMessageResult
            )
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)

        return self._ask_client(namespace, send)

    def elicitation(self, namespace: str, params: dict[str, Any]) -> dict[str, Any]:
        async def send(session: ServerSession) -> dict[str, Any]:
            request = types.ElicitRequest.model_validate({"method": "elicitation/create", "params": params})
            result = await session.send_request(request, types.ElicitResult)
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)

        return self._ask_client(namespace, send)

    def roots(self, namespace: str) -> list[dict[str, Any]]:
        async def send(session: ServerSession) -> list[dict[str, Any]]:
            result = await session.list_roots()
            return [root.model_dump(mode="json", by_alias=True, exclude_none=True) for root in result.roots]

        try:
            return self._ask_client(namespace, send)
        except RuntimeError:
            return []  # no client request in flight: no roots to offer


def _tagged_log(
    client: InFlight, level: str, source: str | None, data: Any
) -> Coroutine[Any, Any, None] | None:
    """The log message for a request another replica forwarded here, tagged as its request
    was (`InFlight.tag`); None below the level that request asked for."""
    if level not in client.levels:
        return None
    notification = types.LoggingMessageNotification(
        params=types.LoggingMessageNotificationParams(
            level=cast(Any, level), data=data, logger=source, _meta={FORWARDED_CALL: client.tag}
        )
    )
    return cast(
        Coroutine[Any, Any, None],
        client.session.send_notification(notification, related_request_id=client.request_id),
    )


class ServerLogs(logging.Handler):
    """Forwards server log records to the gateway's clients (emitted on a host thread)."""

    def __init__(self, forwarding: Forwarding) -> None:
        super().__init__(logging.DEBUG)
        self._forwarding = forwarding

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "mcp_event", None) != "server_log":
            return
        level = getattr(record, "level", None)
        namespace = getattr(record, "namespace", None)
        if isinstance(level, str) and isinstance(namespace, str):
            data = getattr(record, "data", record.getMessage())
            self._forwarding.log(namespace, level, getattr(record, "source", None), data)

    def install(self) -> None:
        SERVER_LOGS.addHandler(self)
        if SERVER_LOGS.level == logging.NOTSET:
            # Server log messages reach the forwarder at every level; the host's own handlers
            # keep filtering by theirs.
            SERVER_LOGS.setLevel(logging.DEBUG)

    def uninstall(self) -> None:
        SERVER_LOGS.removeHandler(self)
