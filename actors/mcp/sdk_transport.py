"""`Transport` on the official MCP SDK (``mcp`` 2.3): stdio, streamable HTTP and legacy SSE.

One long-lived *owner task* per session runs on the runtime's event loop: it enters
``mcp.Client`` and leaves it in that same task (the SDK's cancel scopes demand it) and
publishes the connected client; requests from other tasks use the published client, so many
calls are multiplexed on one session.

What this adds to the SDK:

- Death is pushed, not discovered at the next call: the end of the server's message stream,
  the exit of a stdio server process (a pidfd on Linux) or a crash of the HTTP transport is
  reported to `TransportEvents.on_closed` at once, and every in-flight request of the session
  fails with ``ConnectionError`` (the reason names the exit status and the last stderr lines).
- Timeouts and cancelled callers: the SDK tells the server (``notifications/cancelled``) when an
  awaiting task is cancelled; we bound each call with ``anyio.fail_after`` and raise
  ``TimeoutError``. The session stays usable.
- Fast, parallel close of stdio servers: the SDK closes stdin, then waits up to 2 s before
  SIGTERM. A watchdog started when the transport tears down sends SIGTERM to the server's
  process group after ``close_grace`` (default 0.5 s) and SIGKILL after ``kill_grace`` more.
  Closing is per session, so many sessions close concurrently.
- Children die with the host: on POSIX the command is started through `actors.mcp.pdeathsig`
  (``PR_SET_PDEATHSIG`` = SIGKILL on Linux, then ``execvp``; the pid stays the server's).
- Both protocol eras: ``ping`` only exists in handshake-era sessions, so `probe` sends
  ``server/discover`` on 2026-07-28 sessions; tools/list_changed arrives through the message
  handler (legacy) or a ``subscriptions/listen`` stream (2026-07-28). The negotiated era is
  remembered per server (``protocol_memo``) so that a reconnect in ``auto`` mode pins it and
  never pays the SDK's discovery stall again (up to 10 s on servers that ignore unknown methods).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import shlex
import shutil
import signal
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Final, TextIO, TypeVar

import anyio
import anyio.abc
import httpx2
import mcp_types as types
import pydantic
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from actors.loop import EventLoop
from actors.mcp.elicitation import ElicitationPolicy
from actors.mcp.elicitation import answer as elicitation_answer
from actors.mcp.redaction import Redactor
from actors.mcp.transport import (
    CallOutcome,
    RemoteTool,
    ServerInfo,
    ServerReplyError,
    StartRefused,
    TransportEvents,
)

__all__ = ["KINDS", "MODERN_PROTOCOL", "PROTOCOLS", "SDKTransport"]

logger = logging.getLogger(__name__)

MODERN_PROTOCOL: Final = "2026-07-28"
"""The sessionless protocol revision (no ``initialize``, no ``ping``, ``subscriptions/listen``)."""

KINDS: Final = ("stdio", "streamable-http", "sse")
PROTOCOLS: Final = ("legacy", "auto", MODERN_PROTOCOL)

_CLIENT_INFO = types.Implementation(name="mcp-actors", version="0.1.0")
_PDEATHSIG_SCRIPT = Path(__file__).with_name("pdeathsig.py")

_MAX_PAGES = 1000
_STDERR_TAIL_LINES = 20
_STDERR_LINE_MAX = 500
_REPORTED_STDERR_LINES = 8
_EXIT_POLL_INTERVAL = 0.01
_EXIT_STATUS_WAIT = 0.5
_STDERR_EOF_WAIT = 0.3
_REASON_WAIT = 2.0
_SUSPECT_WAIT = 0.2
_CHECK_TIMEOUT = 10.0
_LISTEN_ACK_TIMEOUT = 5.0
_LISTEN_RETRIES = 3
_LISTEN_RETRY_DELAY = 1.0
_CLOSE_MARGIN = 5.0
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)

# The SDK's own wording for a request cut off by the connection (code -32000 is also a common
# server error code, so the code alone does not prove the connection is gone).
_SDK_CLOSED_MESSAGES = ("Connection closed", "SSE stream ended without a response", "SSE stream failed")

_T = TypeVar("_T")


class _PinRejected(Exception):
    """The server refused the protocol era remembered for it; reconnect in ``auto`` mode."""


@dataclass
class _Attempt:
    """What one connection attempt started; the SDK hands us no handle to any of it."""

    process: anyio.abc.Process | None = None
    pidfd: int | None = None
    stderr: _StderrTail | None = None
    errlog: TextIO | None = None
    stream_errors: deque[str] = field(default_factory=lambda: deque(maxlen=3))
    read_stream: _ObservedReadStream | None = None
    watchdog_scope: anyio.CancelScope | None = None


class SDKTransport:
    """A `Transport` to one MCP server through ``mcp.Client``. Single use: connect once, close once."""

    default_protocol_memo: ClassVar[dict[str, str]] = {}
    """Process-wide memo of negotiated eras (``memo_key`` -> ``"legacy"`` or ``"2026-07-28"``)."""

    def __init__(
        self,
        kind: str,
        *,
        command: str | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        protocol: str = "auto",
        server_name: str = "",
        protocol_memo: MutableMapping[str, str] | None = None,
        request_timeout: float | None = 60.0,
        connect_timeout: float | None = None,
        close_grace: float = 0.5,
        kill_grace: float = 1.0,
        elicitation: ElicitationPolicy | None = None,
    ) -> None:
        """Describe the server; nothing starts before `connect`.

        ``protocol``: ``"legacy"`` (initialize handshake), ``"auto"`` (the SDK discovers the
        era; a remembered era is pinned) or ``"2026-07-28"``. ``sse`` is always legacy.
        ``protocol_memo`` defaults to `default_protocol_memo`. ``request_timeout`` bounds
        `list_tools` and `probe`; ``connect_timeout`` (optional) bounds `connect` with a
        ``ConnectionError`` that carries the diagnostics. ``close_grace``: how long a stdio
        server may take to exit after its stdin closes before it gets SIGTERM. ``elicitation``:
        how to answer ``elicitation/create`` (see `actors.mcp.elicitation`); None declares no
        elicitation capability.
        """
        _check_parameters(kind, protocol, command, url)
        self.kind: str = kind
        self.server_name = server_name
        self._elicitation = elicitation
        self._command = command
        self._args = list(args)
        self._env = dict(env) if env is not None else None
        self._cwd = os.fspath(cwd) if cwd is not None else None
        self._url = url
        self._headers = dict(headers) if headers is not None else None
        self._protocol = "legacy" if kind == "sse" else protocol
        self._memo: MutableMapping[str, str] = (
            protocol_memo if protocol_memo is not None else SDKTransport.default_protocol_memo
        )
        self._request_timeout = request_timeout
        self._connect_timeout = connect_timeout
        self._close_grace = close_grace
        self._kill_grace = kill_grace
        target = url if kind != "stdio" else shlex.join([command or "", *self._args])
        self._label = server_name or target or kind
        # What the server prints may quote its own secrets back: scrub them before logging.
        self._redact = Redactor.for_server(self._env or {}, self._headers or {})
        self.memo_key: str = f"{kind}:{target}" + (f"@{self._cwd}" if kind == "stdio" and self._cwd else "")
        """The key under which the negotiated era is remembered."""

        self.negotiated_protocol: str | None = None
        """The protocol version the session speaks, once connected."""
        self.connect_mode: str | None = None
        """The SDK ``mode`` of the last connection attempt (``legacy``, ``auto`` or a version)."""
        self.spawned_pid: int | None = None
        """The pid of the last server process started, kept after it exits (diagnostics)."""

        self._started = False
        # Created by `connect`, on the loop.
        self._ready: anyio.Event
        self._stop: anyio.Event
        self._done: anyio.Event
        self._reason_ready: anyio.Event
        self._owner_scope: anyio.CancelScope
        self._resolved_command = ""
        self._lost_reported = False
        self._events: TransportEvents | None = None
        self._client: Client | None = None
        self._server_info: ServerInfo | None = None
        self._era: str | None = None
        self._connect_error: BaseException | None = None
        self._closing = False
        self._lost_hint: str | None = None
        self._reason: str | None = None
        self._inflight: set[anyio.CancelScope] = set()
        self._listening = False
        self._checking = False
        self._owner_task: asyncio.Task[None] | None = None
        self._side: anyio.abc.TaskGroup | None = None
        self._attempt = _Attempt()

    # -- the Transport protocol --------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The stdio server's pid while its process runs, else None."""
        process = self._attempt.process
        if process is None or process.returncode is not None:
            return None
        return process.pid

    @property
    def server_info(self) -> ServerInfo | None:
        """What the handshake told us, once connected."""
        return self._server_info

    @property
    def closed_reason(self) -> str | None:
        """Why the session ended (peer death, handshake failure or close), once it has."""
        return self._reason

    async def connect(self, events: TransportEvents | None = None) -> ServerInfo:
        """Start the server (stdio) or reach it (HTTP), do the handshake and return its answer.

        Raises ``ConnectionError`` with the reason (command not found, exit status and stderr,
        handshake error). Cancelling the caller aborts the handshake and reaps the process.
        """
        if self._started:
            raise RuntimeError("SDKTransport is single use: connect() was already called")
        self._started = True
        self._events = events
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._reason_ready = anyio.Event()
        self._owner_scope = anyio.CancelScope()
        if self.kind == "stdio":
            try:
                self._resolved_command = self._resolve_command()
            except ConnectionError as exc:
                self._set_reason(str(exc))
                self._ready.set()
                self._done.set()
                raise
        try:
            self._start_owner()
        except RuntimeError as exc:  # the loop is stopping
            self._set_reason(f"{self._label}: cannot start the session: {exc}")
            self._ready.set()
            self._done.set()
            raise ConnectionError(self._reason) from exc
        try:
            with anyio.fail_after(self._connect_timeout):
                await self._ready.wait()
        except TimeoutError:
            diagnostics = self._diagnostics()
            await self._abort()
            raise ConnectionError(
                f"{self._label}: no answer to the handshake within {self._connect_timeout}s"
                + (f"; {diagnostics}" if diagnostics else "")
            ) from None
        except BaseException:
            await self._abort()
            raise
        if self._connect_error is not None:
            await self._wait_done()
            raise self._connect_error
        assert self._server_info is not None
        return self._server_info

    async def list_tools(self) -> list[RemoteTool]:
        """Every tool the server lists, following ``nextCursor``."""
        client = self._connected_client()

        async def fetch() -> list[types.Tool]:
            tools: list[types.Tool] = []
            cursor: str | None = None
            seen: set[str] = set()
            for _ in range(_MAX_PAGES):
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools
                if cursor in seen:
                    raise RuntimeError(f"{self._label}: tools/list repeated the cursor {cursor!r}")
                seen.add(cursor)
            raise RuntimeError(f"{self._label}: tools/list has more than {_MAX_PAGES} pages")

        tools = await self._request("tools/list", fetch, self._request_timeout)
        return [_remote_tool(tool) for tool in tools]

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float | None) -> CallOutcome:
        """Call one tool; on timeout the server is told to cancel and ``TimeoutError`` is raised."""
        client = self._connected_client()

        async def send() -> types.CallToolResult:
            return await client.call_tool(name, arguments)

        result = await self._request(f"tools/call {name!r}", send, timeout)
        return CallOutcome(
            content=[
                block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content
            ],
            structured_content=result.structured_content,
            is_error=bool(result.is_error),
        )

    async def probe(self) -> None:
        """Check that the server answers: ``ping`` (legacy) or ``server/discover`` (2026-07-28).

        Any answer, even an error, proves the server alive.
        """
        await self._probe(self._request_timeout)

    async def _probe(self, timeout: float | None) -> None:
        client = self._connected_client()
        modern = self._era == MODERN_PROTOCOL

        async def ask() -> None:
            try:
                if modern:
                    await client.session.send_discover(client.protocol_version)
                else:
                    await client.session.send_ping()
            except MCPError as exc:
                if self._is_connection_error(exc) or exc.code == types.REQUEST_TIMEOUT:
                    raise
                logger.debug("%s: probe answered with an error (alive): %s", self._label, exc)

        await self._request("server/discover" if modern else "ping", ask, timeout)

    async def close(self) -> None:
        """Close the session and reap the server. Idempotent; never raises."""
        if not self._started:
            return
        try:
            if not self._done.is_set():
                self._closing = True
                self._set_reason(f"{self._label}: the transport was closed")
                self._cancel_inflight()
                if not self._ready.is_set():
                    self._owner_scope.cancel()
                self._stop.set()
            await self._wait_done()
        except Exception:
            logger.exception("%s: closing the transport failed", self._label)

    # -- requests ----------------------------------------------------------------------------

    def _connected_client(self) -> Client:
        client = self._client
        if client is None or self._stop.is_set():
            if not self._started:
                raise ConnectionError(f"{self._label}: not connected")
            raise ConnectionError(self._reason or f"{self._label}: the connection is closed")
        return client

    async def _request(self, what: str, send: Callable[[], Awaitable[_T]], timeout: float | None) -> _T:
        """Run one request under the session's death watch and ``timeout``."""
        scope = anyio.CancelScope()
        cause: BaseException | None = None
        self._inflight.add(scope)
        try:
            with scope:
                try:
                    with anyio.fail_after(timeout):
                        return await send()
                except TimeoutError:
                    raise TimeoutError(
                        f"{self._label}: {what} got no answer within {timeout}s"
                        " (the server was told to cancel it)"
                    ) from None
                except MCPError as exc:
                    if exc.code == types.REQUEST_TIMEOUT:
                        raise TimeoutError(f"{self._label}: {what} timed out: {exc.message}") from exc
                    if not self._is_connection_error(exc):
                        raise ServerReplyError(exc.message, exc.code) from exc
                    cause = exc
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, httpx2.TransportError) as exc:
                    cause = exc
        finally:
            self._inflight.discard(scope)
        # Cut off by the SDK, or cancelled by `_peer_lost`/`close`: the owner says why.
        raise ConnectionError(await self._wait_reason(what, cause)) from cause

    def _is_connection_error(self, exc: MCPError) -> bool:
        return exc.code == types.CONNECTION_CLOSED and exc.message.startswith(_SDK_CLOSED_MESSAGES)

    async def _wait_reason(self, what: str, cause: BaseException | None) -> str:
        # Stopping: the owner is composing the reason (exit status, stderr). Otherwise the SDK
        # cut one request off (an HTTP stream dropped): wait briefly, then check the server.
        with anyio.move_on_after(_REASON_WAIT if self._stop.is_set() else _SUSPECT_WAIT):
            await self._reason_ready.wait()
        if self._reason is not None:
            return f"{self._reason} (during {what})"
        self._suspect()
        detail = f": {_exc_text(cause)}" if cause is not None else ""
        return f"{self._label}: the connection was lost during {what}{detail}"

    def _suspect(self) -> None:
        """A request was cut off but the session goes on: find out now whether the server is there."""
        side = self._side
        if side is None or self._checking or self._stop.is_set():
            return
        self._checking = True
        side.start_soon(self._check_alive)

    async def _check_alive(self) -> None:
        try:
            await self._probe(_CHECK_TIMEOUT)
        except ConnectionError:
            pass  # the transport failed; the owner reports the end of the session
        except TimeoutError:
            self._peer_lost(f"the server did not answer a probe within {_CHECK_TIMEOUT}s")
        except Exception as exc:
            logger.debug("%s: liveness probe failed: %s", self._label, _exc_text(exc))
        finally:
            self._checking = False

    def _cancel_inflight(self) -> None:
        for scope in list(self._inflight):
            scope.cancel()

    # -- the owner task ----------------------------------------------------------------------

    def _start_owner(self) -> None:
        loop = EventLoop.current()
        if loop is not None:
            loop.spawn(self._own, name=f"mcp-session {self._label}")
        else:
            # Not on an EventLoop thread (a bare anyio.run, say): a plain asyncio task.
            self._owner_task = asyncio.get_running_loop().create_task(self._own())

    async def _abort(self) -> None:
        """Cancel an unfinished connect and wait, shielded and bounded, until it is reaped."""
        self._closing = True
        self._owner_scope.cancel()
        self._stop.set()
        with anyio.CancelScope(shield=True):
            await self._wait_done()

    async def _wait_done(self) -> None:
        with anyio.move_on_after(self._close_grace + self._kill_grace + _CLOSE_MARGIN) as scope:
            await self._done.wait()
        if scope.cancelled_caught:
            logger.warning("%s: the session did not wind down in time", self._label)

    async def _own(self) -> None:
        """Own the session: enter the client, serve until stopped or lost, leave it."""
        failure: BaseException | None = None
        try:
            with self._owner_scope:
                async with anyio.create_task_group() as side:
                    self._side = side
                    try:
                        await self._own_attempts()
                    except Exception as exc:
                        failure = exc
                    finally:
                        self._stop_watchdog()
        except Exception as exc:  # the owner must not fail the loop's task group
            failure = failure or exc
        finally:
            self._client = None
            self._side = None
            if failure is not None:
                self._on_owner_failure(failure)
            if not self._ready.is_set() and self._connect_error is None:
                self._connect_error = ConnectionError(
                    self._reason or f"{self._label}: the connection was aborted before the handshake finished"
                )
            self._set_reason(self._reason or f"{self._label}: the session ended")
            self._unwatch_process()
            self._ready.set()
            self._done.set()

    def _on_owner_failure(self, failure: BaseException) -> None:
        failure = _first_in(failure, ConnectionError) or failure
        if not self._ready.is_set():
            if isinstance(failure, ConnectionError):
                self._connect_error = failure
            else:
                self._connect_error = ConnectionError(f"{self._label}: {_exc_text(failure)}")
                self._connect_error.__cause__ = failure
            self._set_reason(str(self._connect_error))
            return
        if self._closing or self._lost_reported:
            logger.debug("%s: error while closing: %s", self._label, _exc_text(failure))
            return
        # A transport crash (an HTTP request that could not reach the server) ends the client.
        reason = self._reason or f"{self._label}: the connection was lost: {_exc_text(failure)}"
        self._report_lost(reason)

    async def _own_attempts(self) -> None:
        modes = self._modes()
        for attempt, mode in enumerate(modes):
            try:
                await self._own_session(mode)
                return
            except BaseException as failure:
                # Raised inside the SDK's task groups, it may arrive wrapped in a group.
                exc = _first_in(failure, _PinRejected)
                if exc is None:
                    raise
                if attempt + 1 >= len(modes):
                    raise ConnectionError(
                        f"{self._label}: handshake failed: {_exc_text(exc.__cause__)}"
                    ) from exc
                if self._closing:
                    raise ConnectionError(f"{self._label}: closed during the handshake") from exc
                logger.info(
                    "%s: the server refused the remembered protocol %s (%s); discovering it again",
                    self._label,
                    mode,
                    _exc_text(exc.__cause__),
                )
                self._memo.pop(self.memo_key, None)
                # The refused attempt's teardown looked like a lost peer: start the next one clean.
                self._stop = anyio.Event()
                self._lost_hint = None
                self._reason = None

    def _modes(self) -> list[str]:
        if self._protocol != "auto":
            return [self._protocol]
        known = self._memo.get(self.memo_key)
        if known in ("legacy", MODERN_PROTOCOL):
            return [known, "auto"]
        return ["auto"]

    async def _own_session(self, mode: str) -> None:
        self.connect_mode = mode
        self._reset_attempt()
        try:
            await self._serve_session(mode)
        finally:
            # Leaving the client reaped the process (or gave up on it): the deadline is moot.
            self._stop_watchdog()

    async def _serve_session(self, mode: str) -> None:
        async with AsyncExitStack() as stack:
            client = Client(
                await self._sdk_transport(stack),
                mode=mode,
                cache=None,
                client_info=_CLIENT_INFO,
                message_handler=self._on_message,
                logging_callback=self._on_log,
                elicitation_callback=self._on_elicit if self._elicitation is not None else None,
            )
            try:
                await stack.enter_async_context(client)
                if mode == MODERN_PROTOCOL:
                    await self._discover(client)
            except MCPError as exc:
                if mode != "auto" and self._protocol == "auto" and not self._is_connection_error(exc):
                    raise _PinRejected() from exc
                if self._protocol == MODERN_PROTOCOL and exc.code == types.METHOD_NOT_FOUND:
                    raise StartRefused(
                        f"{self._label}: the server does not support protocol {MODERN_PROTOCOL} "
                        f'(server/discover: {_exc_text(exc)}); set "protocol": "auto" or "legacy"'
                    ) from exc
                raise ConnectionError(await self._describe(self._handshake_failure(exc))) from exc
            except Exception as exc:
                raise ConnectionError(await self._describe(self._handshake_failure(exc))) from exc
            self._record_handshake(client)
            self._client = client
            async with anyio.create_task_group() as tasks:
                if self._era == MODERN_PROTOCOL:
                    with anyio.move_on_after(_LISTEN_ACK_TIMEOUT):
                        await tasks.start(self._listen, client)
                self._ready.set()
                logger.info(
                    "%s: connected (%s, protocol %s%s)",
                    self._label,
                    self.kind,
                    self.negotiated_protocol,
                    f", pid {self.spawned_pid}" if self.spawned_pid else "",
                )
                await self._stop.wait()
                if self._lost_hint is not None and not self._closing:
                    self._report_lost(await self._describe(self._lost_hint))
                tasks.cancel_scope.cancel()
            self._client = None

    def _handshake_failure(self, exc: BaseException) -> str:
        if self._lost_hint is not None:
            return f"{self._lost_hint} during the handshake"
        return f"handshake failed: {_exc_text(exc)}"

    async def _discover(self, client: Client) -> None:
        """Confirm a pinned 2026-07-28 session with a real ``server/discover`` (the SDK adopts blind)."""
        raw = await client.session.send_discover(MODERN_PROTOCOL)
        client.session.adopt(types.DiscoverResult.model_validate(raw))

    async def _on_elicit(self, context: Any, params: Any) -> types.ElicitResult:
        assert self._elicitation is not None
        mode = getattr(params, "mode", "form")
        requested = getattr(params, "requested_schema", None)
        if isinstance(requested, pydantic.BaseModel):
            requested = requested.model_dump(mode="json", by_alias=True, exclude_none=True)
        schema = requested if isinstance(requested, Mapping) else None
        reply = elicitation_answer(self._elicitation, mode, schema)
        logger.info("%s: answered an elicitation with %s", self._label, reply["action"])
        return types.ElicitResult.model_validate(reply)

    def _record_handshake(self, client: Client) -> None:
        version = client.protocol_version
        self.negotiated_protocol = version
        self._era = MODERN_PROTOCOL if version in MODERN_PROTOCOL_VERSIONS else "legacy"
        if self._protocol == "auto":
            # Only what auto mode found out is worth remembering: a pinned era says nothing
            # about what the server would choose.
            self._memo[self.memo_key] = self._era
        info = client.server_info
        self._server_info = ServerInfo(
            name=info.name if info is not None else "",
            version=info.version if info is not None else "",
            protocol_version=version,
            capabilities=client.server_capabilities.model_dump(mode="json", by_alias=True, exclude_none=True),
            instructions=client.instructions,
        )

    async def _sdk_transport(self, stack: AsyncExitStack) -> _ObservedTransport:
        """The SDK transport for this kind, wrapped so that we see it start, end and tear down."""
        inner: AbstractAsyncContextManager[Any]
        if self.kind == "stdio":
            errlog = await self._open_stderr(stack)
            inner = stdio_client(self._stdio_parameters(), errlog=errlog)
        elif self.kind == "streamable-http":
            assert self._url is not None
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=self._headers, timeout=_HTTP_TIMEOUT)
            )
            inner = streamable_http_client(self._url, http_client=http)
        else:
            assert self._url is not None
            inner = sse_client(self._url, headers=self._headers)
        return _ObservedTransport(inner, self, spawns=self.kind == "stdio")

    # -- events from the peer -----------------------------------------------------------------

    def _peer_lost(self, hint: str) -> None:
        """The server's stream ended or its process exited: stop the session now."""
        if self._closing or self._lost_hint is not None or self._done.is_set():
            return
        self._lost_hint = hint
        logger.info("%s: %s", self._label, hint)
        if self._attempt.read_stream is not None:
            # Ends the SDK's receive loop, which fails every pending request (the handshake too)
            # even if a grandchild still holds the server's stdout open.
            self._attempt.read_stream.close()
        self._cancel_inflight()
        self._stop.set()

    def _report_lost(self, reason: str) -> None:
        if self._lost_reported:
            return
        self._lost_reported = True
        self._set_reason(reason)
        self._cancel_inflight()
        self._stop.set()
        logger.warning("%s", reason)
        if self._events is not None:
            try:
                self._events.on_closed(reason)
            except Exception:
                logger.exception("%s: the on_closed callback failed", self._label)

    def _set_reason(self, reason: str) -> None:
        if self._reason is None:
            self._reason = reason
        self._reason_ready.set()

    def _tools_changed(self) -> None:
        logger.debug("%s: the tool list changed", self._label)
        if self._events is not None:
            try:
                self._events.on_tools_changed()
            except Exception:
                logger.exception("%s: the on_tools_changed callback failed", self._label)

    async def _on_message(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            text = _unreadable_text(message)
            self._attempt.stream_errors.append(text)
            logger.warning("%s: unreadable message from the server: %s", self._label, self._redact(text))
        elif isinstance(message, types.ToolListChangedNotification) and not self._listening:
            # On 2026-07-28 sessions the listen stream reports the change (and the SDK tees the
            # same notification here): count it once.
            self._tools_changed()

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        logger.debug("%s: server log [%s] %s", self._label, params.level, self._redact(str(params.data)))

    async def _listen(self, client: Client, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Follow tools/list_changed on a 2026-07-28 session; re-listen if the stream drops."""
        started = False
        try:
            for attempt in range(_LISTEN_RETRIES + 1):
                try:
                    async with client.listen(tools_list_changed=True) as subscription:
                        self._listening = bool(subscription.honored.tools_list_changed)
                        if not started:
                            started = True
                            task_status.started()
                        elif self._listening:
                            self._tools_changed()  # events may have been missed while away
                        if not self._listening:
                            return
                        async for event in subscription:
                            if isinstance(event, ToolsListChanged):
                                self._tools_changed()
                    return  # the server ended the stream gracefully
                except (MCPError, SubscriptionLost, ListenNotSupportedError, TimeoutError) as exc:
                    self._listening = False
                    logger.debug("%s: subscriptions/listen ended: %s", self._label, _exc_text(exc))
                    if not isinstance(exc, SubscriptionLost) or attempt == _LISTEN_RETRIES:
                        return  # refused or unsupported: asking again will not help
                    self._suspect()
                if not started:
                    started = True
                    task_status.started()
                await anyio.sleep(_LISTEN_RETRY_DELAY * (attempt + 1))
        finally:
            self._listening = False
            if not started:
                with contextlib.suppress(RuntimeError):
                    task_status.started()

    # -- stdio: the process, its stderr, its death ----------------------------------------------

    def _resolve_command(self) -> str:
        """The command's path, or ``ConnectionError`` now (rather than a wrapper's exit 127)."""
        command = self._command or ""
        if os.sep in command or (os.altsep and os.altsep in command):
            candidate = (
                command if os.path.isabs(command) or self._cwd is None else os.path.join(self._cwd, command)
            )
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return command
            raise StartRefused(f"{self._label}: command not found or not executable: {command!r}")
        search_path = (self._env or {}).get("PATH", os.environ.get("PATH", os.defpath))
        found = shutil.which(command, path=search_path)
        if found is None:
            raise StartRefused(f"{self._label}: command not found: {command!r}")
        return found

    def _stdio_parameters(self) -> StdioServerParameters:
        command, args = self._resolved_command, self._args
        if os.name == "posix" and sys.executable:
            # -I -S: the wrapper needs only the standard library; start it fast.
            args = ["-I", "-S", str(_PDEATHSIG_SCRIPT), f"--ppid={os.getpid()}", command, *args]
            command = sys.executable
        return StdioServerParameters(command=command, args=args, env=self._env, cwd=self._cwd)

    def _reset_attempt(self) -> None:
        self._unwatch_process()
        self._attempt = _Attempt()

    async def _open_stderr(self, stack: AsyncExitStack) -> TextIO:
        """A pipe for the server's stderr, read on the loop into a tail of recent lines."""
        read_fd, write_fd = os.pipe()
        tail = _StderrTail(self._label, self._redact)
        try:
            pipe = os.fdopen(read_fd, "rb", buffering=0)
        except BaseException:
            os.close(read_fd)
            os.close(write_fd)
            raise
        try:
            reader, _ = await asyncio.get_running_loop().connect_read_pipe(lambda: tail, pipe)
        except BaseException:
            pipe.close()
            os.close(write_fd)
            raise
        stack.callback(reader.close)
        errlog = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        stack.callback(errlog.close)
        self._attempt.stderr = tail
        self._attempt.errlog = errlog
        return errlog

    def _after_spawn(self, inner: AbstractAsyncContextManager[Any]) -> None:
        """The SDK started (or failed to start) the process: keep its handle, drop our pipe end."""
        if self._attempt.errlog is not None:
            # The child holds its own copy; ours would keep the pipe open after it exits.
            self._attempt.errlog.close()
        process = _sdk_process(inner)
        if process is None:
            return
        self._attempt.process = process
        self.spawned_pid = process.pid
        self._watch_process(process)

    def _watch_process(self, process: anyio.abc.Process) -> None:
        """Learn of the server's exit at once, even while a grandchild holds its pipes open."""
        pidfd_open = getattr(os, "pidfd_open", None)
        if pidfd_open is None:
            return
        try:
            fd: int = pidfd_open(process.pid)
        except OSError:
            return  # already gone: the end of its stdout says so
        self._attempt.pidfd = fd
        asyncio.get_running_loop().add_reader(fd, self._on_process_exit)

    def _on_process_exit(self) -> None:
        self._unwatch_process()
        self._peer_lost("the server process exited")

    def _unwatch_process(self) -> None:
        fd, self._attempt.pidfd = self._attempt.pidfd, None
        if fd is None:
            return
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(fd)
        with contextlib.suppress(OSError):
            os.close(fd)

    def _start_watchdog(self) -> None:
        """The transport is tearing down: make sure the server is gone within the graces."""
        process, side = self._attempt.process, self._side
        if process is None or side is None or self._attempt.watchdog_scope is not None:
            return
        if process.returncode is not None:
            return
        self._attempt.watchdog_scope = anyio.CancelScope(shield=True)
        side.start_soon(self._watchdog, process, self._attempt.watchdog_scope)

    def _kill_leftovers(self) -> None:
        """The server is gone: kill what it left in its process group (children holding its pipes)."""
        process = self._attempt.process
        if process is not None and process.returncode is not None and os.name == "posix":
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
                logger.debug("%s: killed what was left of process group %d", self._label, process.pid)

    def _stop_watchdog(self) -> None:
        scope, self._attempt.watchdog_scope = self._attempt.watchdog_scope, None
        if scope is not None:
            scope.cancel()

    async def _watchdog(self, process: anyio.abc.Process, scope: anyio.CancelScope) -> None:
        # Shielded: it must outlive a cancelled connect, whose teardown is what it guards.
        with scope:
            for sig, grace in ((signal.SIGTERM, self._close_grace), (signal.SIGKILL, self._kill_grace)):
                if await _wait_exit(process, grace):
                    return
                logger.debug("%s: pid %d still running; sending %s", self._label, process.pid, sig.name)
                _signal_group(process, sig)

    async def _describe(self, what: str) -> str:
        """``what`` plus the exit status, the last stderr lines and any unreadable output."""
        parts = [f"{self._label}: {what}"]
        process = self._attempt.process
        if process is not None:
            await _wait_exit(process, _EXIT_STATUS_WAIT)
            status = _exit_text(process.returncode)
            if status:
                parts.append(status)
        stderr = self._attempt.stderr
        if stderr is not None:
            with anyio.move_on_after(_STDERR_EOF_WAIT):
                await stderr.closed.wait()
        diagnostics = self._diagnostics()
        if diagnostics:
            parts.append(diagnostics)
        return "; ".join(parts)

    def _diagnostics(self) -> str:
        parts = []
        if self._attempt.stderr is not None and (lines := self._attempt.stderr.tail(_REPORTED_STDERR_LINES)):
            parts.append("stderr: " + " | ".join(lines))
        if self._attempt.stream_errors:
            parts.append("not JSON-RPC on stdout: " + " | ".join(self._attempt.stream_errors))
        return "; ".join(parts)

    def __repr__(self) -> str:
        protocol = self.negotiated_protocol or self._protocol
        return f"<SDKTransport {self.kind} {self._label!r} protocol={protocol}>"


class _ObservedTransport:
    """Wraps an SDK transport: reports the spawn, the end of its stream and its teardown."""

    def __init__(self, inner: AbstractAsyncContextManager[Any], owner: SDKTransport, *, spawns: bool) -> None:
        self._inner = inner
        self._owner = owner
        self._spawns = spawns

    async def __aenter__(self) -> tuple[_ObservedReadStream, Any]:
        try:
            read_stream, write_stream = await self._inner.__aenter__()
        finally:
            if self._spawns:
                self._owner._after_spawn(self._inner)
        observed = _ObservedReadStream(read_stream, self._owner)
        self._owner._attempt.read_stream = observed
        return observed, write_stream

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self._owner._start_watchdog()
        try:
            return await self._inner.__aexit__(exc_type, exc, tb)
        finally:
            if self._spawns:
                self._owner._kill_leftovers()


class _ObservedReadStream:
    """The SDK's read stream, telling the owner when it ends while nobody asked it to."""

    def __init__(self, inner: Any, owner: SDKTransport) -> None:
        self._inner = inner
        self._owner = owner

    @property
    def last_context(self) -> Any:
        """The sender's contextvars snapshot, for transports whose streams carry one."""
        return getattr(self._inner, "last_context", None)

    def _ended(self) -> None:
        self._owner._peer_lost("the server closed the connection")

    def close(self) -> None:
        """End the stream now: the SDK's receive loop stops as at end of file."""
        close = getattr(self._inner, "close", None)
        if callable(close):
            close()

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended()
            raise
        return item

    def __aiter__(self) -> _ObservedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _ObservedReadStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _StderrTail(asyncio.Protocol):
    """Reads a server's stderr on the loop: logs each line at DEBUG, keeps the last few."""

    def __init__(self, label: str, redact: Redactor) -> None:
        self._label = label
        self._redact = redact
        self._lines: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""
        self.closed = anyio.Event()

    def tail(self, count: int) -> list[str]:
        """The last ``count`` lines."""
        return list(self._lines)[-count:]

    def data_received(self, data: bytes) -> None:
        text = self._partial + self._decoder.decode(data)
        *lines, self._partial = text.split("\n")
        if len(self._partial) > _STDERR_LINE_MAX:
            lines.append(self._partial)
            self._partial = ""
        for line in lines:
            self._add(line)

    def connection_lost(self, exc: Exception | None) -> None:
        self._add(self._partial + self._decoder.decode(b"", final=True))
        self._partial = ""
        self.closed.set()

    def _add(self, line: str) -> None:
        line = self._redact(line.rstrip("\r"))
        if line.strip():
            logger.debug("%s stderr: %s", self._label, line)
            self._lines.append(line[:_STDERR_LINE_MAX])


_E = TypeVar("_E", bound=BaseException)


def _first_in(failure: BaseException, kind: type[_E]) -> _E | None:
    """``failure`` if it is a ``kind``, else the first ``kind`` in it (task groups wrap errors)."""
    if isinstance(failure, kind):
        return failure
    if isinstance(failure, BaseExceptionGroup):
        for inner in failure.exceptions:
            if (found := _first_in(inner, kind)) is not None:
                return found
    return None


def _check_parameters(kind: str, protocol: str, command: str | None, url: str | None) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown transport kind {kind!r}; expected one of {', '.join(KINDS)}")
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")
    if kind == "stdio" and not command:
        raise ValueError("a stdio transport needs a command")
    if kind != "stdio" and not url:
        raise ValueError(f"a {kind} transport needs a url")


def _sdk_process(inner: AbstractAsyncContextManager[Any]) -> anyio.abc.Process | None:
    """The process that the SDK's ``stdio_client`` started, read from its suspended generator.

    The SDK does not expose it; we need it for the pid, the exit status and the kill deadline.
    """
    frame = getattr(getattr(inner, "gen", None), "ag_frame", None)
    process = frame.f_locals.get("process") if frame is not None else None
    if isinstance(process, anyio.abc.Process):
        return process
    if frame is not None:
        logger.debug("could not find the stdio server's process in the SDK's stdio_client")
    return None


async def _wait_exit(process: anyio.abc.Process, timeout: float) -> bool:
    """Whether the process has exited (and been reaped) within ``timeout``.

    Polls ``returncode``: ``wait()`` would also wait for pipe EOF, which a grandchild can hold.
    """
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(_EXIT_POLL_INTERVAL)
    return process.returncode is not None


def _signal_group(process: anyio.abc.Process, sig: signal.Signals) -> None:
    """Signal the server's process group (the SDK starts it as a session leader)."""
    if process.returncode is not None:
        return
    try:
        if os.name == "posix":
            os.killpg(process.pid, sig)
        elif sig == signal.SIGKILL:
            process.kill()
        else:
            process.terminate()
    except (ProcessLookupError, PermissionError):
        pass


def _exit_text(returncode: int | None) -> str:
    if returncode is None:
        return ""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def _leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside ``exc``, skipping cancellations."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def _exc_text(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    leaf = _leaf(exc)
    text = str(leaf).strip().splitlines()[0] if str(leaf).strip() else ""
    if isinstance(leaf, MCPError):
        return f"{leaf.message} (code {leaf.code})"
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


def _unreadable_text(exc: Exception) -> str:
    if isinstance(exc, pydantic.ValidationError):
        errors = exc.errors()
        if errors and "input" in errors[0]:
            return repr(errors[0]["input"])[:200]
    return _exc_text(exc)[:200]


def _remote_tool(tool: types.Tool) -> RemoteTool:
    return RemoteTool(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
        annotations=(
            tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
            if tool.annotations is not None
            else None
        ),
    )
