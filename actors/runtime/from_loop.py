"""What reaches a server actor from the loop: the transport's pushed news (`Events`) and the
outcomes of what it asked for (a start, a probe, a relist, a subscription), turned into
messages. Everything here runs on the event-loop thread and only builds frozen messages and
`tell`s them: nothing of the actor is touched.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable
from typing import Any

import pykka

from actors.mcp.catalog import Catalog
from actors.mcp.freshness import Freshnesses, Listing
from actors.mcp.transport import RemoteTool, ServerInfo, StartRefused
from actors.runtime.host import HostCalls
from actors.runtime.lifecycle.effects import Supervisor
from actors.runtime.messages import (
    CannotStart,
    CatalogChanged,
    CatalogRelisted,
    ConnectionLost,
    LoginNeeded,
    ProbeDone,
    ResourceUpdated,
    ServerCrashed,
    ServerStopped,
    ServerUp,
    Started,
    StartFailed,
    Subscribed,
    ToolsChanged,
    ToolsRelisted,
)
from actors.runtime.reply import failure, tell
from actors.tools import ErrorType, ToolError, ToolResult

__all__ = [
    "Events",
    "catalog_outcome",
    "for_supervisor",
    "probe_outcome",
    "reason",
    "start_outcome",
    "subscribe_outcome",
    "tools_outcome",
]

# MCP log levels (RFC 5424) as Python logging levels.
_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 5,
    "emergency": logging.CRITICAL + 10,
}

_Outcome = Callable[[concurrent.futures.Future[Any]], Any]


def reason(exc: BaseException) -> str:
    if isinstance(exc, ToolError):
        return exc.details or str(exc)
    return str(exc) or type(exc).__name__


def _emit_log(namespace: str, level: str, source: str | None, data: Any) -> None:
    """Log a server's log message on ``actors.server.<namespace>`` (on a host thread)."""
    text = data if isinstance(data, str) else repr(data)
    logging.getLogger(f"actors.server.{namespace}").log(
        _LOG_LEVELS.get(level, logging.INFO),
        "%s%s",
        f"[{source}] " if source else "",
        text,
        extra={
            "mcp_event": "server_log",
            "namespace": namespace,
            "level": level,
            "source": source,
            "data": data,
        },
    )


class Events:
    """The transport's news for one connection, told to the server actor."""

    def __init__(
        self, ref: pykka.ActorRef[Any], connection: int, namespace: str, host: HostCalls | None
    ) -> None:
        self._ref = ref
        self._connection = connection
        self._namespace = namespace
        self._host = host

    def on_closed(self, why: str, *, auth: bool = False) -> None:
        tell(self._ref, ConnectionLost(self._connection, why, auth))

    def on_tools_changed(self) -> None:
        tell(self._ref, ToolsChanged(self._connection))

    def on_resources_changed(self) -> None:
        tell(self._ref, CatalogChanged(self._connection))

    def on_prompts_changed(self) -> None:
        tell(self._ref, CatalogChanged(self._connection))

    def on_resource_updated(self, uri: str) -> None:
        tell(self._ref, ResourceUpdated(self._connection, uri))

    def on_log(self, level: str, logger: str | None, data: Any) -> None:
        # Logging runs the host's handlers: never on the loop.
        if self._host is not None:
            self._host.notify(_emit_log, self._namespace, level, logger, data)


def for_supervisor(what: Supervisor, namespace: str, why: str) -> ServerUp | ServerCrashed | ServerStopped:
    """The news a lifecycle `Tell` gives the supervisor."""
    if what == Supervisor.CRASHED:
        return ServerCrashed(namespace, why)
    return ServerUp(namespace) if what == Supervisor.UP else ServerStopped(namespace)


def start_outcome(connection: int) -> _Outcome:
    def outcome(
        future: concurrent.futures.Future[tuple[ServerInfo, Listing[RemoteTool], Catalog, Freshnesses]],
    ) -> Any:
        if (exc := failure(future)) is None:
            info, tools, catalog, hints = future.result()
            return Started(connection, info, tuple(tools), catalog, {"tools": tools.freshness, **hints})
        if isinstance(exc, ToolError) and exc.error_type == ErrorType.AUTH:
            return LoginNeeded(connection, reason(exc))
        if isinstance(exc, StartRefused) or isinstance(exc.__cause__, StartRefused):
            return CannotStart(connection, reason(exc))
        return StartFailed(connection, reason(exc))

    return outcome


def probe_outcome(connection: int) -> _Outcome:
    def outcome(future: concurrent.futures.Future[None]) -> ProbeDone:
        if (exc := failure(future)) is None:
            return ProbeDone(connection, None)
        kind = exc.error_type if isinstance(exc, ToolError) else None
        return ProbeDone(connection, reason(exc), kind)

    return outcome


def tools_outcome(connection: int) -> _Outcome:
    def outcome(future: concurrent.futures.Future[Listing[RemoteTool]]) -> ToolsRelisted:
        if (exc := failure(future)) is not None:
            return ToolsRelisted(connection, None, reason(exc))
        tools = future.result()
        return ToolsRelisted(connection, tuple(tools), freshness=tools.freshness)

    return outcome


def catalog_outcome(connection: int) -> _Outcome:
    def outcome(future: concurrent.futures.Future[tuple[Catalog, Freshnesses]]) -> CatalogRelisted:
        if (exc := failure(future)) is not None:
            return CatalogRelisted(connection, None, reason(exc))
        catalog, hints = future.result()
        return CatalogRelisted(connection, catalog, freshness=hints)

    return outcome


def subscribe_outcome(connection: int, uri: str) -> _Outcome:
    def outcome(future: concurrent.futures.Future[ToolResult]) -> Subscribed:
        if (exc := failure(future)) is not None:
            return Subscribed(connection, uri, reason(exc))
        result = future.result()
        return Subscribed(connection, uri, None if result.success else result.error)

    return outcome
