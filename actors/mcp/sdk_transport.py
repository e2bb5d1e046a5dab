"""`Transport` on the official MCP SDK (``mcp`` 2.3): stdio, streamable HTTP and legacy SSE.

One long-lived *owner task* per session runs on the runtime's event loop: it enters
``mcp.Client`` and leaves it in that same task (the SDK's cancel scopes demand it) and
publishes the connected client; requests from other tasks use the published client, so many
calls are multiplexed on one session.

What this adds to the SDK:

- Death is pushed, not discovered at the next call: the end of the server's message stream,
  the exit of a stdio server process (`actors.mcp.stdio_process`) or a crash of the HTTP
  transport is reported to `TransportEvents.on_closed` at once, and every in-flight request of
  the session fails with ``ConnectionError`` (the reason names the exit status and the last
  stderr lines).
- Timeouts and cancelled callers: the SDK tells the server (``notifications/cancelled``) when an
  awaiting task is cancelled; we bound each call with ``anyio.fail_after`` and raise
  ``TimeoutError``. The session stays usable.
- Fast, parallel close of stdio servers (SIGTERM after ``close_grace``, not the SDK's 2 s), and
  children that die with the host (`actors.mcp.pdeathsig`).
- No session outlives a failed or cancelled `connect`: it is closed and its process reaped,
  shielded from the caller's cancellation, before `connect` returns.
- Nothing blocking on the shared loop: the command's path lookup and the SSL context
  (`actors.mcp.tls`) are done on a worker thread; what the SDK imports lazily is loaded here.
  Stdio runs on a stream of our own (`actors.mcp.stdio_stream`), not the SDK's ``stdio_client``:
  the server is started off the loop and its output read in linear time, up to
  ``max_message_bytes`` per message.
- Both protocol eras: ``ping`` only exists in handshake-era sessions, so `probe` sends
  ``server/discover`` on 2026-07-28 sessions; list changes and resource updates arrive through
  the message handler and ``resources/subscribe`` (legacy) or ``subscriptions/listen`` streams
  (2026-07-28, `actors.mcp.listen`). The era that auto mode negotiated is remembered per server
  (`actors.mcp.eras`), so a reconnect pins it and never pays the SDK's discovery stall again
  (up to 10 s on servers that ignore unknown methods).
- Logins (`actors.mcp.auth`): an HTTP session authenticates with the provider that
  ``SDKOptions.auth`` makes, one per connection. A refusal, or a login nobody can do now, is an
  `AuthError` (type ``auth``): `connect` raises it as it is, and mid-session it ends the session
  (its text is the close reason) and every in-flight request raises it. Without a provider a
  401 or 403 is an `AuthRefused` too, with the server's ``WWW-Authenticate`` reason.
- The host's answers to server requests (`ClientHandlers`: sampling, elicitation, roots) are
  given JSON and give JSON; one that raises, hangs past ``handler_timeout`` or answers nonsense
  gives the server an error answer, and the session goes on. Server log messages and progress
  go to the events and the caller's `Progress` as they are: nothing here logs them.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
import shlex
import ssl
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, ClassVar, Final, TypeVar, cast

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread

# Loaded here, on the importing thread, because it would otherwise load on the event loop:
# httpx2 imports its HTTP core when it builds its first client.
import httpcore2  # noqa: F401
import httpx2
import mcp_types as types
import pydantic
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

from actors.loop import EventLoop
from actors.mcp.auth import AuthError, AuthRefused, auth_failure, refusal_reason
from actors.mcp.config import ServerConfig
from actors.mcp.elicitation import answer as elicitation_answer
from actors.mcp.eras import AUTO, LEGACY, MODERN_PROTOCOL, PROTOCOLS, EraMemo, era_of
from actors.mcp.listen import ListenKinds, ListenStreams
from actors.mcp.redaction import Redactor
from actors.mcp.sdk_options import HTTPEndpoint, SDKOptions, StdioCommand
from actors.mcp.stdio_process import StdioProcess, command_line, resolve_command
from actors.mcp.stdio_stream import stdio_stream
from actors.mcp.tls import default_ssl_context
from actors.mcp.transport import (
    CallOutcome,
    ClientHandlers,
    JSONObject,
    Progress,
    RemotePrompt,
    RemoteResource,
    RemoteResourceTemplate,
    RemoteTool,
    ServerInfo,
    ServerReplyError,
    StartRefused,
    TransportEvents,
)

__all__ = [
    "KINDS",
    "MODERN_PROTOCOL",
    "PROTOCOLS",
    "HTTPEndpoint",
    "SDKOptions",
    "SDKTransport",
    "StdioCommand",
]

logger = logging.getLogger(__name__)

KINDS: Final = ("stdio", "streamable-http", "sse")

_CLIENT_INFO = types.Implementation(name="mcp-actors", version="0.1.0")

_MAX_PAGES = 1000
_REPORTED_STDERR_LINES = 8
_EXIT_STATUS_WAIT = 0.5
_STDERR_EOF_WAIT = 0.3
_REASON_WAIT = 2.0
_SUSPECT_WAIT = 0.2
_CHECK_TIMEOUT = 10.0
_CLOSE_MARGIN = 5.0
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)

# The SDK's own wording for a request cut off by the connection (code -32000 is also a common
# server error code, so the code alone does not prove the connection is gone).
_SDK_CLOSED_MESSAGES = ("Connection closed", "SSE stream ended without a response", "SSE stream failed")

# One worker thread per event loop serves the transports' short blocking look-ups; anyio keeps
# each worker thread until its loop ends, so letting them run in parallel would only add threads.
_LOOKUP_SLOTS: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar("mcp_actors_lookups")

_T = TypeVar("_T")
_M = TypeVar("_M", bound=pydantic.BaseModel)

# Protocol bookkeeping in results (result type, cache hints), not part of the answer.
_BOOKKEEPING = {"result_type", "ttl_ms", "cache_scope"}


class _PinRejected(Exception):
    """The server refused the protocol era remembered for it; reconnect in ``auto`` mode."""


@dataclass
class _Attempt:
    """What one connection attempt started."""

    stdio: StdioProcess | None = None
    stream_errors: deque[str] = field(default_factory=lambda: deque(maxlen=3))
    read_stream: _ObservedReadStream | None = None


class SDKTransport:
    """A `ClientTransport` to one MCP server through ``mcp.Client``. Single use: connect once,
    close once.

    ::

        SDKTransport(StdioCommand("mcp-server-time"), SDKOptions(server_name="time"))
        SDKTransport(HTTPEndpoint("https://example.com/mcp", {"Authorization": "Bearer ..."}))
        SDKTransport.for_server(server_config, ssl_context=default_ssl_context(), handlers=answers,
                                auth=functools.partial(oauth_provider, server_config, TokenStore()))
    """

    default_protocol_memo: ClassVar[dict[str, str]] = {}
    """Process-wide memo of negotiated eras (``memo_key`` -> ``"legacy"`` or ``"2026-07-28"``)."""

    bounds_requests: ClassVar[bool] = True
    """Every tool call ends within its ``timeout`` (`_request`): callers need no guard of their own."""

    def __init__(self, target: StdioCommand | HTTPEndpoint, options: SDKOptions | None = None) -> None:
        """Describe the server; nothing starts before `connect`. Cheap: no I/O, no imports."""
        self.target = target
        self.options = options if options is not None else SDKOptions()
        self.kind: str = target.kind
        self.server_name = self.options.server_name
        self._protocol = LEGACY if self.kind == "sse" else self.options.protocol
        memo = self.options.protocol_memo
        self._eras = EraMemo(memo if memo is not None else SDKTransport.default_protocol_memo)
        if isinstance(target, StdioCommand):
            shown = shlex.join([target.command, *target.args])
            self.memo_key: str = f"stdio:{shown}" + (f"@{target.cwd}" if target.cwd else "")
            """The key under which the negotiated era is remembered."""
            # What the server prints may quote its own secrets back: scrub them before logging.
            self._redact = Redactor.for_server(target.env or {}, {})
        else:
            shown = target.url
            self.memo_key = f"{target.kind}:{target.url}"
            self._redact = Redactor.for_server({}, target.headers or {})
        self._label = self.server_name or shown or self.kind

        self.negotiated_protocol: str | None = None
        """The protocol version the session speaks, once connected."""
        self.connect_mode: str | None = None
        """The SDK ``mode`` of the last connection attempt (``legacy``, ``auto`` or a version)."""
        self.spawned_pid: int | None = None
        """The pid of the last server process started, kept after it exits (diagnostics)."""

        self._started = False
        self._owner_started = False
        # Created by `connect`, on the loop.
        self._ready: anyio.Event
        self._stop: anyio.Event
        self._done: anyio.Event
        self._reason_ready: anyio.Event
        self._owner_scope: anyio.CancelScope
        self._resolved_command = ""
        self._ssl_context: ssl.SSLContext | None = None
        self._lost_reported = False
        self._events: TransportEvents | None = None
        self._client: Client | None = None
        self._server_info: ServerInfo | None = None
        self._era: str | None = None
        self._connect_error: BaseException | None = None
        self._auth_error: AuthError | None = None
        self._closing = False
        self._lost_hint: str | None = None
        self._reason: str | None = None
        self._inflight: set[anyio.CancelScope] = set()
        self._streams: ListenStreams | None = None
        self._checking = False
        self._owner_task: asyncio.Task[None] | None = None
        self._side: anyio.abc.TaskGroup | None = None
        self._attempt = _Attempt()

    @classmethod
    def for_server(
        cls,
        config: ServerConfig,
        *,
        ssl_context: ssl.SSLContext | None = None,
        handlers: ClientHandlers | None = None,
        auth: Callable[[], httpx2.Auth] | None = None,
    ) -> SDKTransport:
        """A transport to the server that ``config`` describes. Cheap: safe on the event loop.

        ``ssl_context`` (HTTP and SSE): build it once, off the loop, and pass it to every
        transport; without it the first connect builds `actors.mcp.tls.default_ssl_context`
        on a worker thread. ``handlers`` answer the server's requests; sampling only where the
        config says ``"sampling": "allow"`` (it spends the host's model budget). ``auth`` (HTTP
        and SSE) makes the credentials of each connection (see `SDKOptions.auth`).
        """
        if handlers is not None and handlers.sampling is not None and config.sampling != "allow":
            handlers = replace(handlers, sampling=None)
        target: StdioCommand | HTTPEndpoint
        if config.transport == "stdio":
            target = StdioCommand(config.command or "", config.args, config.env, config.cwd)
        else:
            target = HTTPEndpoint(config.url or "", config.headers, config.transport)
        options = SDKOptions(
            server_name=config.name,
            protocol=config.protocol,
            connect_timeout=config.connect_timeout,
            max_message_bytes=config.max_message_bytes,
            elicitation=config.elicitation,
            handlers=handlers,
            log_level=config.log_level,
            ssl_context=ssl_context,
            auth=auth,
        )
        return cls(target, options)

    # -- the Transport protocol --------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The stdio server's pid while its process runs, else None."""
        stdio = self._attempt.stdio
        return stdio.pid if stdio is not None else None

    @property
    def server_info(self) -> ServerInfo | None:
        """What the handshake told us, once connected."""
        return self._server_info

    @property
    def closed_reason(self) -> str | None:
        """Why the session ended (peer death, handshake failure, cancelled connect or close), once it has."""
        return self._reason

    async def connect(self, events: TransportEvents | None = None) -> ServerInfo:
        """Start the server (stdio) or reach it (HTTP), do the handshake and return its answer.

        Raises ``ConnectionError`` with the reason (command not found, exit status and stderr,
        handshake error). However it fails, or if its caller is cancelled, the session is closed
        and its process reaped before it returns.
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
        timeout = self.options.connect_timeout
        try:
            with anyio.fail_after(timeout):
                await self._prepare()
                if self._closing:
                    raise ConnectionError(self._reason or f"{self._label}: closed during connect")
                self._start_owner()
                await self._ready.wait()
        except TimeoutError:
            diagnostics = self._diagnostics()
            message = f"{self._label}: no answer to the handshake within {timeout}s" + (
                f"; {diagnostics}" if diagnostics else ""
            )
            await self._shut(message)
            raise ConnectionError(message) from None
        except BaseException as exc:
            await self._shut(self._abort_reason(exc))
            raise
        if self._connect_error is not None:
            with anyio.CancelScope(shield=True):
                await self._wait_done()
            raise self._connect_error
        assert self._server_info is not None
        return self._server_info

    async def list_tools(self) -> list[RemoteTool]:
        """Every tool the server lists, following ``nextCursor``."""
        client = self._connected_client()

        async def page(cursor: str | None) -> tuple[Sequence[types.Tool], str | None]:
            answer = await client.list_tools(cursor=cursor)
            return answer.tools, answer.next_cursor

        return [_remote_tool(tool) for tool in await self._paged("tools/list", page)]

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float | None) -> CallOutcome:
        """Call one tool; on timeout the server is told to cancel and ``TimeoutError`` is raised."""
        client = self._connected_client()

        async def send() -> types.CallToolResult:
            return await client.call_tool(name, arguments)

        return _outcome(await self._request(f"tools/call {name!r}", send, timeout))

    # -- the ClientTransport protocol ----------------------------------------------------------

    async def call_tool_with_progress(
        self, name: str, arguments: dict[str, Any], timeout: float | None, progress: Progress
    ) -> CallOutcome:
        """`call_tool` with a progress token: ``progress`` is awaited for each notification."""
        client = self._connected_client()

        # The SDK's callback protocol names the parameters; ours is the same positional shape.
        callback = cast(ProgressFnT, progress)

        async def send() -> types.CallToolResult:
            return await client.call_tool(name, arguments, progress_callback=callback)

        return _outcome(await self._request(f"tools/call {name!r}", send, timeout))

    async def list_resources(self) -> list[RemoteResource]:
        """Every resource the server lists, following ``nextCursor``."""
        client = self._connected_client()

        async def page(cursor: str | None) -> tuple[Sequence[types.Resource], str | None]:
            answer = await client.list_resources(cursor=cursor)
            return answer.resources, answer.next_cursor

        return [_remote_resource(resource) for resource in await self._paged("resources/list", page)]

    async def list_resource_templates(self) -> list[RemoteResourceTemplate]:
        """Every resource template the server lists, following ``nextCursor``."""
        client = self._connected_client()

        async def page(cursor: str | None) -> tuple[Sequence[types.ResourceTemplate], str | None]:
            answer = await client.list_resource_templates(cursor=cursor)
            return answer.resource_templates, answer.next_cursor

        templates = await self._paged("resources/templates/list", page)
        return [_remote_template(template) for template in templates]

    async def list_prompts(self) -> list[RemotePrompt]:
        """Every prompt the server lists, following ``nextCursor``."""
        client = self._connected_client()

        async def page(cursor: str | None) -> tuple[Sequence[types.Prompt], str | None]:
            answer = await client.list_prompts(cursor=cursor)
            return answer.prompts, answer.next_cursor

        return [_remote_prompt(prompt) for prompt in await self._paged("prompts/list", page)]

    async def read_resource(self, uri: str, timeout: float | None) -> JSONObject:
        """``{"contents": [{"uri", "mimeType", "text" | "blob"}, ...]}``."""
        client = self._connected_client()

        async def send() -> types.ReadResourceResult:
            return await client.read_resource(uri)

        return _json(await self._request(f"resources/read {uri}", send, timeout))

    async def get_prompt(self, name: str, arguments: dict[str, str], timeout: float | None) -> JSONObject:
        """``{"description"?, "messages": [...]}``."""
        client = self._connected_client()

        async def send() -> types.GetPromptResult:
            return await client.get_prompt(name, arguments)

        return _json(await self._request(f"prompts/get {name!r}", send, timeout))

    async def complete(
        self, ref: JSONObject, argument: dict[str, str], context: dict[str, str] | None, timeout: float | None
    ) -> JSONObject:
        """``{"completion": {"values", "total"?, "hasMore"?}}`` for a prompt's or a template's argument.

        Raises ``ValueError`` for a ``ref`` that is neither ``ref/prompt`` nor ``ref/resource``.
        """
        reference = _reference(ref)
        client = self._connected_client()

        async def send() -> types.CompleteResult:
            return await client.complete(reference, argument, context)

        return _json(await self._request("completion/complete", send, timeout))

    async def subscribe_resource(self, uri: str) -> None:
        """Follow updates of ``uri``: ``resources/subscribe``, or on 2026-07-28 sessions a listen
        stream that includes it (returns once the server acknowledged it)."""
        await self._subscription(uri, follow=True)

    async def unsubscribe_resource(self, uri: str) -> None:
        """Stop following updates of ``uri``."""
        await self._subscription(uri, follow=False)

    async def _subscription(self, uri: str, *, follow: bool) -> None:
        client = self._connected_client()
        streams = self._streams
        if self._era == MODERN_PROTOCOL:
            if streams is None:
                raise ConnectionError(self._reason or f"{self._label}: the connection is closed")
            change = streams.follow if follow else streams.unfollow
            await self._request(
                f"subscriptions/listen {uri}", lambda: change(uri), self.options.request_timeout
            )
            return
        # Sent as requests: the SDK's methods for them warn on every call (deprecated in 2026-07-28).
        request: types.SubscribeRequest | types.UnsubscribeRequest
        if follow:
            request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
        else:
            request = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))

        async def send() -> None:
            await client.session.send_request(request, types.EmptyResult)

        await self._request(f"{request.method} {uri}", send, self.options.request_timeout)

    async def probe(self) -> None:
        """Check that the server answers: ``ping`` (legacy) or ``server/discover`` (2026-07-28).

        Any answer, even an error, proves the server alive.
        """
        await self._probe(self.options.request_timeout)

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
        """Close the session and reap the server, even if the caller is cancelled meanwhile.

        Idempotent; never raises.
        """
        if not self._started:
            return
        try:
            await self._shut(f"{self._label}: the transport was closed")
        except Exception:
            logger.exception("%s: closing the transport failed", self._label)

    # -- requests ----------------------------------------------------------------------------

    def _connected_client(self) -> Client:
        client = self._client
        if client is None or self._stop.is_set():
            if not self._started:
                raise ConnectionError(f"{self._label}: not connected")
            if self._auth_error is not None:
                raise copy.copy(self._auth_error)
            raise ConnectionError(self._reason or f"{self._label}: the connection is closed")
        return client

    async def _request(self, what: str, send: Callable[[], Awaitable[_T]], timeout: float | None) -> _T:
        """Run one request under the session's death watch and ``timeout``."""
        # One scope serves both: `_cancel_inflight` cancels it when the peer is lost, and its
        # deadline is the timeout (an anyio scope costs ~5-10 us to enter and leave).
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
                    if not self._is_connection_error(exc):
                        raise ServerReplyError(exc.message, exc.code) from exc
                    cause = exc
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, httpx2.TransportError) as exc:
                    cause = exc
                except pydantic.ValidationError as exc:
                    raise ServerReplyError(
                        f"the server's answer to {what} is malformed: {_validation_text(exc)}",
                        types.INTERNAL_ERROR,
                    ) from exc
        finally:
            self._inflight.discard(scope)
        if scope.cancelled_caught and anyio.current_time() >= deadline:
            raise TimeoutError(
                f"{self._label}: {what} got no answer within {timeout}s (the server was told to cancel it)"
            )
        if self._auth_error is not None:
            # The session ended because the server refused its credentials: say so, as `auth`.
            raise copy.copy(self._auth_error) from cause
        # Cut off by the SDK, or cancelled by `_peer_lost`/`close`: the owner says why.
        raise ConnectionError(await self._wait_reason(what, cause)) from cause

    async def _paged(
        self, what: str, page: Callable[[str | None], Awaitable[tuple[Sequence[_T], str | None]]]
    ) -> list[_T]:
        """Every item of a paged list, under one `_request`."""

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

        return await self._request(what, fetch, self.options.request_timeout)

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

    async def _prepare(self) -> None:
        """Look up what connecting needs from the file system, on a worker thread."""
        target = self.target
        if isinstance(target, StdioCommand):
            self._resolved_command = await _off_loop(resolve_command, target, self._label)
        else:
            self._ssl_context = self.options.ssl_context or await _off_loop(default_ssl_context)

    def _start_owner(self) -> None:
        loop = EventLoop.current()
        try:
            if loop is not None:
                loop.spawn(self._own, name=f"mcp-session {self._label}")
            else:
                # Not on an EventLoop thread (a bare anyio.run, say): a plain asyncio task.
                self._owner_task = asyncio.get_running_loop().create_task(self._own())
        except RuntimeError as exc:  # the loop is stopping
            raise ConnectionError(f"{self._label}: cannot start the session: {exc}") from exc
        self._owner_started = True

    def _abort_reason(self, exc: BaseException) -> str:
        if isinstance(exc, ConnectionError):
            return str(exc)
        if isinstance(exc, anyio.get_cancelled_exc_class()):
            return f"{self._label}: the connect was cancelled"
        return f"{self._label}: the connect failed: {_exc_text(exc)}"

    async def _shut(self, reason: str) -> None:
        """End the session, whatever it is doing, and wait (shielded, bounded) until it is reaped."""
        if not self._done.is_set():
            self._closing = True
            self._set_reason(reason)
            self._cancel_inflight()
            if not self._owner_started:
                self._ready.set()
                self._done.set()
                return
            if not self._ready.is_set():
                self._owner_scope.cancel()
            self._stop.set()
        with anyio.CancelScope(shield=True):
            await self._wait_done()

    async def _wait_done(self) -> None:
        options = self.options
        with anyio.move_on_after(options.close_grace + options.kill_grace + _CLOSE_MARGIN) as scope:
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
        except Exception as exc:  # the owner must not fail the loop's task group
            failure = failure or exc
        finally:
            self._client = None
            self._side = None
            if failure is not None:
                self._on_owner_failure(failure)
            if not self._ready.is_set() and self._connect_error is None:
                self._connect_error = self._auth_error or ConnectionError(
                    self._reason or f"{self._label}: the connection was aborted before the handshake finished"
                )
            self._set_reason(self._reason or f"{self._label}: the session ended")
            self._unwatch_process()
            self._ready.set()
            self._done.set()

    def _on_owner_failure(self, failure: BaseException) -> None:
        auth = self._auth_in(failure)
        if auth is not None and self._auth_error is None and not self._closing:
            self._auth_error = auth  # before `_report_lost` wakes the in-flight requests
        failure = auth or _first_in(failure, ConnectionError) or failure
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
        if auth is not None:
            self._report_lost(self._reason or str(auth))
            return
        self._report_lost(self._reason or f"{self._label}: the connection was lost: {_exc_text(failure)}")

    def _auth_in(self, failure: BaseException) -> AuthError | None:
        """The `AuthError` this session met, or the first one in ``failure`` (which the SDK's
        task groups may have wrapped), the SDK's OAuth errors and HTTP 401/403 included."""
        if self._auth_error is not None:
            return self._auth_error
        if isinstance(failure, BaseExceptionGroup):
            for inner in failure.exceptions:
                if (found := self._auth_in(inner)) is not None:
                    return found
            return None
        return auth_failure(failure, self._label)

    def _refused(self, failure: AuthError) -> None:
        """The credentials were refused, or a login is needed that nobody can do now: the
        session cannot go on (an auth flow reports it as it fails; see `_ObservedAuth`)."""
        if self._auth_error is not None or self._closing or self._done.is_set():
            return
        self._auth_error = failure
        if self._ready.is_set():
            self._report_lost(str(failure))
            return
        # The handshake cannot succeed; over SSE it would not even end (the SDK only logs a
        # failed POST), so end it now: `connect` raises the failure.
        self._set_reason(str(failure))
        self._owner_scope.cancel()

    async def _own_attempts(self) -> None:
        modes = self._eras.modes(self.memo_key, self._protocol)
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
                self._eras.forget(self.memo_key)
                # The refused attempt's teardown looked like a lost peer: start the next one clean.
                self._stop = anyio.Event()
                self._lost_hint = None
                self._reason = None

    async def _own_session(self, mode: str) -> None:
        self.connect_mode = mode
        self._reset_attempt()
        await self._serve_session(mode)

    async def _serve_session(self, mode: str) -> None:
        options = self.options
        handlers = options.handlers or ClientHandlers()
        elicits = handlers.elicitation is not None or options.elicitation is not None
        async with AsyncExitStack() as stack:
            client = Client(
                await self._sdk_transport(stack),
                mode=mode,
                cache=None,
                client_info=_CLIENT_INFO,
                message_handler=self._on_message,
                logging_callback=self._on_log,
                log_level=options.log_level,
                sampling_callback=self._on_sampling if handlers.sampling is not None else None,
                list_roots_callback=self._on_roots if handlers.roots is not None else None,
                elicitation_callback=self._on_elicit if elicits else None,
            )
            try:
                await stack.enter_async_context(client)
                if mode == MODERN_PROTOCOL:
                    await self._discover(client)
            except MCPError as exc:
                if (auth := self._auth_in(exc)) is not None:
                    raise auth from auth.__cause__
                if mode != AUTO and self._protocol == AUTO and not self._is_connection_error(exc):
                    raise _PinRejected() from exc
                if self._protocol == MODERN_PROTOCOL and exc.code == types.METHOD_NOT_FOUND:
                    raise StartRefused(
                        f"{self._label}: the server does not support protocol {MODERN_PROTOCOL} "
                        f'(server/discover: {_exc_text(exc)}); set "protocol": "auto" or "legacy"'
                    ) from exc
                raise ConnectionError(await self._describe(self._handshake_failure(exc))) from exc
            except Exception as exc:
                if (auth := self._auth_in(exc)) is not None:
                    # A login is needed, or was refused: not a handshake failure. Raised as it is.
                    raise auth from auth.__cause__
                raise ConnectionError(await self._describe(self._handshake_failure(exc))) from exc
            self._record_handshake(client)
            self._client = client
            async with anyio.create_task_group() as tasks:
                if self._era == MODERN_PROTOCOL:
                    self._streams = self._listen_streams(client)
                    await tasks.start(self._streams.run)
                elif options.log_level is not None and self._offers("logging"):
                    await self._set_log_level(client, options.log_level)
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
            self._streams = None

    def _handshake_failure(self, exc: BaseException) -> str:
        if self._lost_hint is not None:
            return f"{self._lost_hint} during the handshake"
        return f"handshake failed: {_exc_text(exc)}"

    def _offers(self, capability: str) -> bool:
        info = self._server_info
        return info is not None and info.capabilities.get(capability) is not None

    def _listen_streams(self, client: Client) -> ListenStreams:
        kinds = ListenKinds(resources=self._offers("resources"), prompts=self._offers("prompts"))
        return ListenStreams(client, self._label, kinds, self._on_event, self._suspect)

    async def _set_log_level(self, client: Client, level: types.LoggingLevel) -> None:
        """Tell a handshake-era server the least severe log message to send; a refusal is logged."""
        request = types.SetLevelRequest(params=types.SetLevelRequestParams(level=level))
        try:
            with anyio.fail_after(self.options.request_timeout):
                # A request, not the SDK's set_logging_level: that warns on every call.
                await client.session.send_request(request, types.EmptyResult)
        except (MCPError, TimeoutError) as exc:
            logger.warning("%s: logging/setLevel %s failed: %s", self._label, level, _exc_text(exc))

    async def _discover(self, client: Client) -> None:
        """Confirm a pinned 2026-07-28 session with a real ``server/discover`` (the SDK adopts blind)."""
        raw = await client.session.send_discover(MODERN_PROTOCOL)
        client.session.adopt(types.DiscoverResult.model_validate(raw))

    # -- the server's requests (sampling, elicitation, roots) -------------------------------------

    async def _on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        handlers = self.options.handlers
        assert handlers is not None and handlers.sampling is not None
        sampling = handlers.sampling
        model: type[types.CreateMessageResult | types.CreateMessageResultWithTools] = (
            types.CreateMessageResultWithTools
            if params.tools is not None or params.tool_choice is not None
            else types.CreateMessageResult
        )
        return await self._host_answer("sampling/createMessage", lambda: sampling(_json(params)), model)

    async def _on_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        handlers = self.options.handlers
        assert handlers is not None and handlers.roots is not None
        roots = handlers.roots

        async def listed() -> JSONObject:
            return {"roots": await roots()}

        return await self._host_answer("roots/list", listed, types.ListRootsResult)

    async def _host_answer(
        self, what: str, ask: Callable[[], Awaitable[Any]], model: type[_M]
    ) -> _M | types.ErrorData:
        """The host's answer to a server request as ``model``, or the error the server gets."""
        limit = self.options.handler_timeout
        try:
            with anyio.fail_after(limit):
                answer = await ask()
        except Exception as exc:
            text = _exc_text(exc) if str(exc) else f"no answer within {limit:g} s"
            return self._refuse(what, text)
        try:
            return model.model_validate(answer)
        except pydantic.ValidationError as exc:
            return self._refuse(what, f"the answer is not a {model.__name__}: {_validation_text(exc)}")

    def _refuse(self, what: str, why: str) -> types.ErrorData:
        logger.warning("%s: the host could not answer %s: %s", self._label, what, why)
        return types.ErrorData(
            code=types.INTERNAL_ERROR, message=f"the client could not answer {what}: {why}"
        )

    async def _on_elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        handlers = self.options.handlers
        if handlers is not None and handlers.elicitation is not None:
            elicitation = handlers.elicitation
            return await self._host_answer(
                "elicitation/create", lambda: elicitation(_json(params)), types.ElicitResult
            )
        policy = self.options.elicitation
        assert policy is not None
        mode = getattr(params, "mode", "form")
        requested = getattr(params, "requested_schema", None)
        if isinstance(requested, pydantic.BaseModel):
            requested = requested.model_dump(mode="json", by_alias=True, exclude_none=True)
        schema = requested if isinstance(requested, Mapping) else None
        reply = elicitation_answer(policy, mode, schema)
        logger.info("%s: answered an elicitation with %s", self._label, reply["action"])
        return types.ElicitResult.model_validate(reply)

    def _record_handshake(self, client: Client) -> None:
        version = client.protocol_version
        self.negotiated_protocol = version
        self._era = era_of(version)
        self._eras.learn(self.memo_key, self._protocol, self._era)
        info = client.server_info
        self._server_info = ServerInfo(
            name=info.name if info is not None else "",
            version=info.version if info is not None else "",
            protocol_version=version,
            capabilities=client.server_capabilities.model_dump(mode="json", by_alias=True, exclude_none=True),
            instructions=client.instructions,
        )

    async def _sdk_transport(self, stack: AsyncExitStack) -> _ObservedTransport:
        """The SDK transport for the target, wrapped so that we see it start, end and tear down."""
        target = self.target
        inner: AbstractAsyncContextManager[Any]
        if isinstance(target, StdioCommand):
            stdio = StdioProcess(
                command_line(target, self._resolved_command),
                env=target.env,
                cwd=target.cwd,
                label=self._label,
                redact=self._redact,
                close_grace=self.options.close_grace,
                kill_grace=self.options.kill_grace,
                on_exit=self._process_exited,
            )
            self._attempt.stdio = stdio
            await stdio.open_stderr(stack)
            inner = stdio_stream(
                stdio, max_message_bytes=self.options.max_message_bytes, on_failure=self._stdout_failed
            )
        else:
            assert self._ssl_context is not None
            headers = dict(target.headers) if target.headers is not None else None
            make_auth = self.options.auth
            auth = _ObservedAuth(make_auth() if make_auth is not None else None, self)
            if target.kind == "sse":
                inner = sse_client(
                    target.url,
                    headers=headers,
                    httpx_client_factory=_client_factory(self._ssl_context),
                    auth=auth,
                )
            else:
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(
                        headers=headers, timeout=_HTTP_TIMEOUT, verify=self._ssl_context, auth=auth
                    )
                )
                inner = streamable_http_client(target.url, http_client=http)
        return _ObservedTransport(inner, self)

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

    def _tell(self, news: str, *args: Any) -> None:
        """Call ``events.<news>(*args)``; a listener without that method does not want that news."""
        handler = getattr(self._events, news, None) if self._events is not None else None
        if handler is None:
            return
        try:
            handler(*args)
        except Exception:
            logger.exception("%s: the %s callback failed", self._label, news)

    def _on_event(self, event: ServerEvent) -> None:
        """A change the server announced, on a listen stream or as a notification."""
        match event:
            case ToolsListChanged():
                logger.debug("%s: the tool list changed", self._label)
                self._tell("on_tools_changed")
            case ResourcesListChanged():
                logger.debug("%s: the resource list changed", self._label)
                self._tell("on_resources_changed")
            case PromptsListChanged():
                logger.debug("%s: the prompt list changed", self._label)
                self._tell("on_prompts_changed")
            case ResourceUpdated(uri=uri):
                self._tell("on_resource_updated", uri)

    async def _on_message(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            text = _unreadable_text(message)
            self._attempt.stream_errors.append(text)
            logger.warning("%s: unreadable message from the server: %s", self._label, self._redact(text))
            return
        meta = getattr(message.params, "meta", None)
        if meta and SUBSCRIPTION_ID_META_KEY in meta:
            return  # a listen stream's event, which the SDK tees here too: the stream reports it
        match message:
            case types.ToolListChangedNotification():
                self._on_event(ToolsListChanged())
            case types.ResourceListChangedNotification():
                self._on_event(ResourcesListChanged())
            case types.PromptListChangedNotification():
                self._on_event(PromptsListChanged())
            case types.ResourceUpdatedNotification(params=params):
                self._on_event(ResourceUpdated(uri=str(params.uri)))
            case _:
                pass

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self._tell("on_log", params.level, params.logger, params.data)

    # -- stdio: the process (see actors.mcp.stdio_process) ---------------------------------------

    def _reset_attempt(self) -> None:
        self._unwatch_process()
        self._attempt = _Attempt()

    def _after_spawn(self) -> None:
        """The server's process was started (or failed to start)."""
        stdio = self._attempt.stdio
        if stdio is not None and stdio.process is not None:
            self.spawned_pid = stdio.process.pid

    def _process_exited(self) -> None:
        self._peer_lost("the server process exited")

    def _stdout_failed(self, error: ConnectionError) -> None:
        """The stream gave up on the server's output (a message over ``max_message_bytes``)."""
        self._peer_lost(str(error))

    def _unwatch_process(self) -> None:
        if self._attempt.stdio is not None:
            self._attempt.stdio.unwatch()

    async def _describe(self, what: str) -> str:
        """``what`` plus the exit status, the last stderr lines and any unreadable output."""
        parts = [f"{self._label}: {what}"]
        stdio = self._attempt.stdio
        if stdio is not None:
            status = await stdio.exit_status(_EXIT_STATUS_WAIT)
            if status:
                parts.append(status)
            await stdio.stderr_closed(_STDERR_EOF_WAIT)
        diagnostics = self._diagnostics()
        if diagnostics:
            parts.append(diagnostics)
        return "; ".join(parts)

    def _diagnostics(self) -> str:
        parts = []
        stdio = self._attempt.stdio
        if stdio is not None and (lines := stdio.stderr_lines(_REPORTED_STDERR_LINES)):
            parts.append("stderr: " + " | ".join(lines))
        if self._attempt.stream_errors:
            parts.append("not JSON-RPC on stdout: " + " | ".join(self._attempt.stream_errors))
        return "; ".join(parts)

    def __repr__(self) -> str:
        protocol = self.negotiated_protocol or self._protocol
        return f"<SDKTransport {self.kind} {self._label!r} protocol={protocol}>"


class _ObservedAuth(httpx2.Auth):
    """A session's HTTP auth: the login's provider, if any, each refusal reported to the owner.

    The owner hears of it here, as it happens: the SDK's streamable HTTP transport lets it end
    the session wrapped in task groups, its SSE transport only logs it (and then waits), and
    the GET stream retries. Without a provider a 401 or 403 answer is a refusal too.
    """

    def __init__(self, inner: httpx2.Auth | None, owner: SDKTransport) -> None:
        self._inner = inner
        self._owner = owner

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        try:
            if self._inner is None:
                response = yield request
                if response.status_code in (401, 403):
                    raise AuthRefused(self._owner._label, response.status_code, refusal_reason(response))
                return
            flow = self._inner.async_auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()
        except Exception as exc:
            failure = auth_failure(exc, self._owner._label)
            if failure is None:
                raise
            self._owner._refused(failure)
            if failure is exc:
                raise
            raise failure from exc


class _ObservedTransport:
    """Wraps an SDK transport: reports the spawn and the end of its stream."""

    def __init__(self, inner: AbstractAsyncContextManager[Any], owner: SDKTransport) -> None:
        self._inner = inner
        self._owner = owner

    async def __aenter__(self) -> tuple[_ObservedReadStream, Any]:
        try:
            read_stream, write_stream = await self._inner.__aenter__()
        finally:
            self._owner._after_spawn()
        observed = _ObservedReadStream(read_stream, self._owner)
        self._owner._attempt.read_stream = observed
        return observed, write_stream

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        # The stdio stream stops its server within the graces as it exits (actors.mcp.stdio_stream).
        return await self._inner.__aexit__(exc_type, exc, tb)


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


async def _off_loop(fn: Callable[..., _T], *args: Any) -> _T:
    """Run a short blocking call (a walk of ``PATH``, an SSL context build) on a worker thread."""
    try:
        slots = _LOOKUP_SLOTS.get()
    except LookupError:
        slots = anyio.CapacityLimiter(1)
        _LOOKUP_SLOTS.set(slots)
    return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True, limiter=slots)


def _client_factory(context: ssl.SSLContext) -> Callable[..., httpx2.AsyncClient]:
    """The SSE transport's client factory: the SDK's defaults, with our SSL context."""

    def make(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout if timeout is not None else _HTTP_TIMEOUT,
            auth=auth,
            verify=context,
        )

    return make


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


def _validation_text(exc: pydantic.ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return str(exc).splitlines()[0]
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', '')}{more}" if where else f"{first.get('msg', '')}{more}"


def _json(model: pydantic.BaseModel) -> JSONObject:
    """An SDK object as MCP JSON, without the protocol's bookkeeping fields."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude=_BOOKKEEPING)


def _optional_json(model: pydantic.BaseModel | None) -> JSONObject | None:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True) if model is not None else None


def _outcome(result: types.CallToolResult) -> CallOutcome:
    return CallOutcome(
        content=[block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content],
        structured_content=result.structured_content,
        is_error=bool(result.is_error),
    )


def _reference(ref: JSONObject) -> types.PromptReference | types.ResourceTemplateReference:
    kind = ref.get("type")
    try:
        if kind == "ref/prompt":
            return types.PromptReference.model_validate(ref)
        if kind == "ref/resource":
            return types.ResourceTemplateReference.model_validate(ref)
    except pydantic.ValidationError as exc:
        raise ValueError(f"a bad completion reference {ref!r}: {_validation_text(exc)}") from None
    raise ValueError(f"a completion reference has the type ref/prompt or ref/resource; got {ref!r}")


def _remote_tool(tool: types.Tool) -> RemoteTool:
    return RemoteTool(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
        annotations=_optional_json(tool.annotations),
        task_support=tool.execution.task_support if tool.execution is not None else None,
    )


def _remote_resource(resource: types.Resource) -> RemoteResource:
    return RemoteResource(
        uri=str(resource.uri),
        name=resource.name,
        title=resource.title,
        description=resource.description,
        mime_type=resource.mime_type,
        size=resource.size,
        annotations=_optional_json(resource.annotations),
    )


def _remote_template(template: types.ResourceTemplate) -> RemoteResourceTemplate:
    return RemoteResourceTemplate(
        uri_template=template.uri_template,
        name=template.name,
        title=template.title,
        description=template.description,
        mime_type=template.mime_type,
        annotations=_optional_json(template.annotations),
    )


def _remote_prompt(prompt: types.Prompt) -> RemotePrompt:
    return RemotePrompt(
        name=prompt.name,
        title=prompt.title,
        description=prompt.description,
        arguments=tuple(
            argument.model_dump(mode="json", by_alias=True, exclude_none=True)
            for argument in prompt.arguments or ()
        ),
    )
