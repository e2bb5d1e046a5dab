"""`SDKTransport`: the `Transport` on the official MCP SDK, composed of this package's parts.

It builds the parts and wires them with hooks; each part owns its state and offers narrow
public methods (none reaches into another): `owner.SessionOwner` (the session's one task),
`negotiation.EraNegotiation`, `requests.SessionRequests` (death watch), `peer.PeerWatch` (death and
diagnostics), `server_requests.ServerRequests`, `notifications.NotificationRouter`, `calls`
(which SDK call each method is) and `convert` (SDK <-> plain data).

Owned by the event-loop thread: built anywhere (cheap, no I/O), then connected, used and closed
on the loop only.
"""

from __future__ import annotations

import copy
import logging
import shlex
import ssl
from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar, Final

import anyio
import httpx2
from mcp import Client

from actors.mcp.config import ServerConfig
from actors.mcp.eras import LEGACY, EraMemo
from actors.mcp.freshness import Listing
from actors.mcp.inputs import CALL_INPUTS
from actors.mcp.redaction import Redactor
from actors.mcp.revisions import HANDSHAKE, Input, Notices, Revision
from actors.mcp.sdk_options import HTTPEndpoint, SDKOptions, StdioCommand
from actors.mcp.sdk_transport import calls, tasks
from actors.mcp.sdk_transport.channel import prepare
from actors.mcp.sdk_transport.failures import exc_text
from actors.mcp.sdk_transport.negotiation import EraNegotiation
from actors.mcp.sdk_transport.notifications import NotificationRouter
from actors.mcp.sdk_transport.owner import SessionOwner
from actors.mcp.sdk_transport.peer import PeerWatch
from actors.mcp.sdk_transport.requests import SessionRequests
from actors.mcp.sdk_transport.server_requests import ServerRequests
from actors.mcp.tasks import TaskState
from actors.mcp.transport import (
    CallOutcome,
    ClientHandlers,
    JSONObject,
    Progress,
    RemoteTool,
    Request,
    ServerInfo,
    TransportEvents,
)

__all__ = ["KINDS", "SDKTransport"]

logger = logging.getLogger(__name__)

KINDS: Final = ("stdio", "streamable-http", "sse")


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
    """Every tool call ends within its ``timeout`` (`SessionRequests.run`): callers need no guard
    of their own."""

    def __init__(self, target: StdioCommand | HTTPEndpoint, options: SDKOptions | None = None) -> None:
        """Describe the server; nothing starts before `connect`. Cheap: no I/O, no imports."""
        self.target = target
        self.options = options if options is not None else SDKOptions()
        self.kind: str = target.kind
        self.server_name = self.options.server_name
        if isinstance(target, StdioCommand):
            shown = shlex.join([target.command, *target.args])
            self.memo_key: str = f"stdio:{shown}" + (f"@{target.cwd}" if target.cwd else "")
            """The key under which the negotiated era is remembered."""
            # What the server prints may quote its own secrets back: scrub them before logging.
            redact = Redactor.for_server(target.env or {}, {})
        else:
            shown = target.url
            self.memo_key = f"{target.kind}:{target.url}"
            redact = Redactor.for_server({}, target.headers or {})
        self._label = label = self.server_name or shown or self.kind
        self._redact = redact
        memo = self.options.protocol_memo
        protocol = LEGACY if self.kind == "sse" else self.options.protocol
        self._negotiation = EraNegotiation(
            label,
            protocol,
            EraMemo(memo if memo is not None else SDKTransport.default_protocol_memo),
            self.memo_key,
        )
        self._watch = PeerWatch(
            label, on_stop=self._stop_session, on_closed=self._closed, abort=self._abort, probe=self._check
        )
        self._router = NotificationRouter(label, redact, self._watch.unreadable)
        self._requests = SessionRequests(label, self._watch)
        self._answers = ServerRequests(label, self.options)
        self._owner: SessionOwner | None = None

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
            target = StdioCommand(config.command or "", config.args, config.env, config.cwd, config.sandbox)
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

    # -- what is known -------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The stdio server's pid while its process runs, else None."""
        return self._watch.pid

    @property
    def spawned_pid(self) -> int | None:
        """The pid of the last server process started, kept after it exits (diagnostics)."""
        return self._watch.spawned_pid

    @property
    def server_info(self) -> ServerInfo | None:
        """What the handshake told us, once connected."""
        return self._owner.server_info if self._owner is not None else None

    @property
    def negotiated_protocol(self) -> str | None:
        """The protocol version the session speaks, once connected."""
        return self._owner.negotiated_protocol if self._owner is not None else None

    @property
    def connect_mode(self) -> str | None:
        """The SDK ``mode`` of the last connection attempt (``legacy``, ``auto`` or a version)."""
        return self._owner.connect_mode if self._owner is not None else None

    @property
    def closed_reason(self) -> str | None:
        """Why the session ended (peer death, handshake failure, cancelled connect or close), once it has."""
        return self._watch.reason

    def stray_output(self) -> tuple[str, ...]:
        """The first lines a stdio server wrote to stdout that are not MCP, quoted
        (`actors.mcp.transport.StrayOutput`): what a connect cut short by its caller quotes."""
        return self._watch.stray_output

    # -- connect and close ---------------------------------------------------------------------

    async def connect(self, events: TransportEvents | None = None) -> ServerInfo:
        """Start the server (stdio) or reach it (HTTP), do the handshake and return its answer.

        Raises ``ConnectionError`` with the reason (command not found, exit status and stderr,
        handshake error). However it fails, or if its caller is cancelled, the session is closed
        and its process reaped before it returns.
        """
        if self._owner is not None:
            raise RuntimeError("SDKTransport is single use: connect() was already called")
        self._owner = owner = SessionOwner(
            self._label,
            self.target,
            self.options,
            self._redact,
            watch=self._watch,
            negotiation=self._negotiation,
            router=self._router,
            answers=self._answers,
        )
        self._router.listen(events)
        self._watch.begin()
        timeout = self.options.connect_timeout
        try:
            with anyio.fail_after(timeout):
                prepared = await prepare(self.target, self.options, self._label)
                if self._watch.closing:
                    raise ConnectionError(self._watch.reason or f"{self._label}: closed during connect")
                return await owner.start(prepared)
        except TimeoutError:
            diagnostics = self._watch.diagnostics()
            message = f"{self._label}: no answer to the handshake within {timeout}s" + (
                f"; {diagnostics}" if diagnostics else ""
            )
            await self._shut(message)
            raise ConnectionError(message) from None
        except BaseException as exc:
            await self._shut(self._abort_reason(exc))
            raise

    async def close(self) -> None:
        """Close the session and reap the server, even if the caller is cancelled meanwhile.

        Idempotent; never raises.
        """
        if self._owner is None:
            return
        try:
            await self._shut(f"{self._label}: the transport was closed")
        except Exception:
            logger.exception("%s: closing the transport failed", self._label)

    def _abort_reason(self, exc: BaseException) -> str:
        if isinstance(exc, ConnectionError):
            return str(exc)
        if isinstance(exc, anyio.get_cancelled_exc_class()):
            return f"{self._label}: the connect was cancelled"
        return f"{self._label}: the connect failed: {exc_text(exc)}"

    async def _shut(self, reason: str) -> None:
        """End the session, whatever it is doing, and wait (shielded, bounded) until it is reaped."""
        owner = self._owner
        assert owner is not None
        if self._watch.ended:
            # Ended already (a connect whose caller was cancelled ends its owner first).
            self._watch.set_reason(reason)
        else:
            self._watch.close_requested(reason)
            self._requests.cancel_all()
            owner.abort()
            owner.stop()
        with anyio.CancelScope(shield=True):
            await owner.wait_finished()

    # -- the hooks the parts are wired with ----------------------------------------------------

    def _stop_session(self) -> None:
        """The peer is gone: every request in flight fails now, and the owner winds down."""
        self._requests.cancel_all()
        if self._owner is not None:
            self._owner.stop()

    def _closed(self, reason: str, auth: bool) -> None:
        self._router.closed(reason, auth=auth)

    def _abort(self) -> None:
        if self._owner is not None:
            self._owner.abort()

    async def _check(self, timeout: float) -> None:
        await self._probe(timeout)

    # -- requests ------------------------------------------------------------------------------

    def _client(self) -> Client:
        owner = self._owner
        client = owner.client if owner is not None else None
        if client is None or self._watch.stopping:
            if owner is None:
                raise ConnectionError(f"{self._label}: not connected")
            refusal = self._watch.auth_error
            if refusal is not None:
                raise copy.copy(refusal)
            raise ConnectionError(self._watch.reason or f"{self._label}: the connection is closed")
        return client

    def _revision(self) -> Revision:
        """What the session's protocol revision does differently (`actors.mcp.revisions`)."""
        return self._owner.revision if self._owner is not None else HANDSHAKE

    async def list_tools(self) -> Listing[RemoteTool]:
        """Every tool the server lists, following ``nextCursor``, with the pages' caching hint."""
        return await calls.list_tools(self._requests, self._client(), self.options.request_timeout)

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float | None) -> CallOutcome:
        """Call one tool; on timeout the server is told to cancel and ``TimeoutError`` is raised.

        A call with `CallInputs` (`actors.mcp.inputs.CALL_INPUTS`) has them answer what the
        server asks for it: its rounds on 2026-07-28, its server requests in the handshake era.
        """
        return await self._call(name, arguments, timeout, None)

    async def call_tool_with_progress(
        self, name: str, arguments: dict[str, Any], timeout: float | None, progress: Progress
    ) -> CallOutcome:
        """`call_tool` with a progress token: ``progress`` is awaited for each notification."""
        return await self._call(name, arguments, timeout, progress)

    async def _call(
        self, name: str, arguments: dict[str, Any], timeout: float | None, progress: Progress | None
    ) -> CallOutcome:
        client = self._client()
        inputs = CALL_INPUTS.get()
        if inputs is None:
            return await calls.call_tool(self._requests, client, name, arguments, timeout, progress)
        if self._revision().input is Input.ROUNDS:
            rounds = (inputs, self.options.handler_timeout)
            return await calls.call_tool(self._requests, client, name, arguments, timeout, progress, rounds)
        with self._answers.answering(inputs):
            return await calls.call_tool(self._requests, client, name, arguments, timeout, progress)

    async def start_task(self, name: str, arguments: dict[str, Any], timeout: float | None) -> TaskState:
        """``tools/call``, keeping the task the server may make of it (on 2026-07-28 sessions,
        where the tasks extension lives); else its answer, as a task that ended at once. A call
        with `CallInputs` has them answer the rounds before the task, as `call_tool` does."""
        client = self._client()
        if not self._revision().extensions:  # the tasks extension needs declared extensions
            return TaskState.answered(await self._call(name, arguments, timeout, None))
        inputs = CALL_INPUTS.get()
        rounds = (inputs, self.options.handler_timeout) if inputs is not None else None
        return await self._requests.run(
            f"tools/call {name!r}", lambda: tasks.start(client, name, arguments, rounds), timeout
        )

    async def get_task(self, task_id: str, timeout: float | None, *, answer: bool = True) -> TaskState:
        """``tasks/get``; ``answer``: the input the task waits on answered by the host's
        handlers first."""
        session = self._client().session
        return await self._requests.run(
            f"tasks/get {task_id}", lambda: tasks.get(session, task_id, answer=answer), timeout
        )

    async def update_task(self, task_id: str, responses: dict[str, Any], timeout: float | None) -> None:
        """``tasks/update`` with (some of) the answers the task waits on."""
        session = self._client().session
        await self._requests.run(
            f"tasks/update {task_id}", lambda: tasks.update(session, task_id, responses), timeout
        )

    async def send(self, request: Request, timeout: float | None) -> JSONObject:
        """Any request of the session (`RequestTransport`): an extension's, say."""
        return await calls.send(self._requests, self._client(), request, timeout)

    async def cancel_task(self, task_id: str, timeout: float | None) -> TaskState:
        """``tasks/cancel``; the task as the server says after it."""
        session = self._client().session
        return await self._requests.run(
            f"tasks/cancel {task_id}", lambda: tasks.cancel(session, task_id), timeout
        )

    async def read_resource(self, uri: str, timeout: float | None) -> JSONObject:
        """``{"contents": [{"uri", "mimeType", "text" | "blob"}, ...]}``, and on 2026-07-28 the
        result's caching hint under `actors.mcp.freshness.CACHE_HINT` (`calls.read_resource`)."""
        return await calls.read_resource(self._requests, self._client(), uri, timeout)

    async def get_prompt(self, name: str, arguments: dict[str, str], timeout: float | None) -> JSONObject:
        """``{"description"?, "messages": [...]}``; the prompt's `CallInputs` as for `call_tool`."""
        client = self._client()
        inputs = CALL_INPUTS.get()
        if inputs is None:
            return await calls.get_prompt(self._requests, client, name, arguments, timeout)
        if self._revision().input is Input.ROUNDS:
            rounds = (inputs, self.options.handler_timeout)
            return await calls.get_prompt(self._requests, client, name, arguments, timeout, rounds)
        with self._answers.answering(inputs):
            return await calls.get_prompt(self._requests, client, name, arguments, timeout)

    async def subscribe_resource(self, uri: str) -> None:
        """Follow updates of ``uri``: ``resources/subscribe``, or on 2026-07-28 sessions a listen
        stream that includes it (returns once the server acknowledged it)."""
        await self._follow(uri, on=True)

    async def unsubscribe_resource(self, uri: str) -> None:
        """Stop following updates of ``uri``."""
        await self._follow(uri, on=False)

    async def _follow(self, uri: str, *, on: bool) -> None:
        client = self._client()
        streams = None
        if self._revision().notices is Notices.LISTEN:
            assert self._owner is not None
            streams = self._owner.streams
            if streams is None:
                raise ConnectionError(self._watch.reason or f"{self._label}: the connection is closed")
        await calls.follow(self._requests, client, streams, uri, on=on, timeout=self.options.request_timeout)

    async def probe(self) -> None:
        """Check that the server answers: ``ping`` (legacy) or ``server/discover`` (2026-07-28).

        Any answer, even an error, proves the server alive.
        """
        await self._probe(self.options.request_timeout)

    async def _probe(self, timeout: float | None) -> None:
        client = self._client()
        await self._requests.probe(client, self._revision().liveness, timeout=timeout)

    def __repr__(self) -> str:
        protocol = self.negotiated_protocol or self._negotiation.protocol
        return f"<SDKTransport {self.kind} {self._label!r} protocol={protocol}>"
