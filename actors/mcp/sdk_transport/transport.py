"""`SDKTransport`: the `Transport` on the official MCP SDK, composed of this package's parts.

It builds the parts and wires them with hooks; each part owns its state and offers narrow
public methods (none reaches into another): `owner.SessionOwner` (the session's one task),
`negotiation.EraNegotiation`, `requests.Requests` (death watch), `peer.PeerWatch` (death and
diagnostics), `server_requests.ServerRequests`, `notifications.NotificationRouter` and
`convert` (SDK <-> plain data).

Owned by the event-loop thread: built anywhere (cheap, no I/O), then connected, used and closed
on the loop only.
"""

from __future__ import annotations

import copy
import logging
import shlex
import ssl
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Final, cast

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT

from actors.mcp.config import ServerConfig
from actors.mcp.eras import LEGACY, MODERN_PROTOCOL, EraMemo
from actors.mcp.redaction import Redactor
from actors.mcp.sdk_options import HTTPEndpoint, SDKOptions, StdioCommand
from actors.mcp.sdk_transport import convert
from actors.mcp.sdk_transport.channel import prepare
from actors.mcp.sdk_transport.failures import exc_text
from actors.mcp.sdk_transport.negotiation import EraNegotiation
from actors.mcp.sdk_transport.notifications import NotificationRouter
from actors.mcp.sdk_transport.owner import SessionOwner
from actors.mcp.sdk_transport.peer import PeerWatch
from actors.mcp.sdk_transport.requests import Requests
from actors.mcp.sdk_transport.server_requests import ServerRequests
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
    """Every tool call ends within its ``timeout`` (`Requests.run`): callers need no guard of their own."""

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
        self._requests = Requests(label, self._watch)
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
            answers=ServerRequests(self._label, self.options),
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

    def _closed(self, reason: str) -> None:
        self._router.closed(reason)

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

    def _modern(self) -> bool:
        return self._owner is not None and self._owner.era == MODERN_PROTOCOL

    async def list_tools(self) -> list[RemoteTool]:
        """Every tool the server lists, following ``nextCursor``."""
        client = self._client()

        async def page(cursor: str | None) -> tuple[Sequence[types.Tool], str | None]:
            answer = await client.list_tools(cursor=cursor)
            return answer.tools, answer.next_cursor

        tools = await self._requests.paged("tools/list", page, self.options.request_timeout)
        return [convert.remote_tool(tool) for tool in tools]

    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float | None) -> CallOutcome:
        """Call one tool; on timeout the server is told to cancel and ``TimeoutError`` is raised."""
        client = self._client()

        async def send() -> types.CallToolResult:
            return await client.call_tool(name, arguments)

        return convert.outcome(await self._requests.run(f"tools/call {name!r}", send, timeout))

    async def call_tool_with_progress(
        self, name: str, arguments: dict[str, Any], timeout: float | None, progress: Progress
    ) -> CallOutcome:
        """`call_tool` with a progress token: ``progress`` is awaited for each notification."""
        client = self._client()

        # The SDK's callback protocol names the parameters; ours is the same positional shape.
        callback = cast(ProgressFnT, progress)

        async def send() -> types.CallToolResult:
            return await client.call_tool(name, arguments, progress_callback=callback)

        return convert.outcome(await self._requests.run(f"tools/call {name!r}", send, timeout))

    async def list_resources(self) -> list[RemoteResource]:
        """Every resource the server lists, following ``nextCursor``."""
        client = self._client()

        async def page(cursor: str | None) -> tuple[Sequence[types.Resource], str | None]:
            answer = await client.list_resources(cursor=cursor)
            return answer.resources, answer.next_cursor

        resources = await self._requests.paged("resources/list", page, self.options.request_timeout)
        return [convert.remote_resource(resource) for resource in resources]

    async def list_resource_templates(self) -> list[RemoteResourceTemplate]:
        """Every resource template the server lists, following ``nextCursor``."""
        client = self._client()

        async def page(cursor: str | None) -> tuple[Sequence[types.ResourceTemplate], str | None]:
            answer = await client.list_resource_templates(cursor=cursor)
            return answer.resource_templates, answer.next_cursor

        templates = await self._requests.paged("resources/templates/list", page, self.options.request_timeout)
        return [convert.remote_template(template) for template in templates]

    async def list_prompts(self) -> list[RemotePrompt]:
        """Every prompt the server lists, following ``nextCursor``."""
        client = self._client()

        async def page(cursor: str | None) -> tuple[Sequence[types.Prompt], str | None]:
            answer = await client.list_prompts(cursor=cursor)
            return answer.prompts, answer.next_cursor

        prompts = await self._requests.paged("prompts/list", page, self.options.request_timeout)
        return [convert.remote_prompt(prompt) for prompt in prompts]

    async def read_resource(self, uri: str, timeout: float | None) -> JSONObject:
        """``{"contents": [{"uri", "mimeType", "text" | "blob"}, ...]}``."""
        client = self._client()

        async def send() -> types.ReadResourceResult:
            return await client.read_resource(uri)

        return convert.to_json(await self._requests.run(f"resources/read {uri}", send, timeout))

    async def get_prompt(self, name: str, arguments: dict[str, str], timeout: float | None) -> JSONObject:
        """``{"description"?, "messages": [...]}``."""
        client = self._client()

        async def send() -> types.GetPromptResult:
            return await client.get_prompt(name, arguments)

        return convert.to_json(await self._requests.run(f"prompts/get {name!r}", send, timeout))

    async def complete(
        self, ref: JSONObject, argument: dict[str, str], context: dict[str, str] | None, timeout: float | None
    ) -> JSONObject:
        """``{"completion": {"values", "total"?, "hasMore"?}}`` for a prompt's or a template's argument.

        Raises ``ValueError`` for a ``ref`` that is neither ``ref/prompt`` nor ``ref/resource``.
        """
        reference = convert.reference(ref)
        client = self._client()

        async def send() -> types.CompleteResult:
            return await client.complete(reference, argument, context)

        return convert.to_json(await self._requests.run("completion/complete", send, timeout))

    async def subscribe_resource(self, uri: str) -> None:
        """Follow updates of ``uri``: ``resources/subscribe``, or on 2026-07-28 sessions a listen
        stream that includes it (returns once the server acknowledged it)."""
        await self._subscription(uri, follow=True)

    async def unsubscribe_resource(self, uri: str) -> None:
        """Stop following updates of ``uri``."""
        await self._subscription(uri, follow=False)

    async def _subscription(self, uri: str, *, follow: bool) -> None:
        client = self._client()
        timeout = self.options.request_timeout
        if self._modern():
            assert self._owner is not None
            streams = self._owner.streams
            if streams is None:
                raise ConnectionError(self._watch.reason or f"{self._label}: the connection is closed")
            change = streams.follow if follow else streams.unfollow
            await self._requests.run(f"subscriptions/listen {uri}", lambda: change(uri), timeout)
            return
        # Sent as requests: the SDK's methods for them warn on every call (deprecated in 2026-07-28).
        request: types.SubscribeRequest | types.UnsubscribeRequest
        if follow:
            request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
        else:
            request = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))

        async def send() -> None:
            await client.session.send_request(request, types.EmptyResult)

        await self._requests.run(f"{request.method} {uri}", send, timeout)

    async def probe(self) -> None:
        """Check that the server answers: ``ping`` (legacy) or ``server/discover`` (2026-07-28).

        Any answer, even an error, proves the server alive.
        """
        await self._probe(self.options.request_timeout)

    async def _probe(self, timeout: float | None) -> None:
        client = self._client()
        await self._requests.probe(client, modern=self._modern(), timeout=timeout)

    def __repr__(self) -> str:
        protocol = self.negotiated_protocol or self._negotiation.protocol
        return f"<SDKTransport {self.kind} {self._label!r} protocol={protocol}>"
