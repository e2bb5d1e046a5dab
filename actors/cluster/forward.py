"""`Forwarder`: a call for a single-affinity server, sent to the replica that runs it.

The owner is another gateway replica: the call goes to its MCP endpoint over the SDK's
Streamable HTTP client, in the 2026-07-28 era (stateless: one POST per request, no handshake),
with the cluster's bearer token, under the external name the owner serves it by. A header marks
it forwarded, so the owner serves it itself or refuses it, never forwards it again.

One client per owner address carries every call forwarded there, concurrent ones too (the era is
stateless per request): opening one per call cost more than the call (a new connection, a new
session, its task group). One per owner and set of client capabilities, in truth: a 2026-07-28
request declares the client's capabilities, and the SDK's client declares its own, so a call is
sent by a client that declares what the caller's client did (`actors.cluster.forwarded_call`).
A client is held by a task on the loop that first forwarded there, dropped after a failure that
may have broken it (re-opened by the next call), by `Forwarder.close_address` when the owner
changes, and by `Forwarder.close` on shutdown.

What the owner asks and says during a call (rounds of input, log messages, progress) reaches the
caller's client through the call's `CallInputs` and `CallRelay` (`actors.cluster.forwarded_call`).

Every outcome is a `ToolResult` in the shape the gateway answers from (a tool call's
``content``/``structuredContent``, a read's ``contents``, a prompt's ``messages``); failures are
classified: ``connection`` with `is_unreachable` true when the owner could not be reached at all
(the call never ran there); ``connection`` too when the owner went away mid-call (it may have run);
``timeout`` past the server's call timeout. The one answer raised, not classified: the owner's
-32021 (the request needs a client capability its client did not declare), which the client
must get as the protocol error it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import UnionType
from typing import Any, TypeVar, cast

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    RequestParamsMeta,
)

from actors.cluster.forwarded_call import (
    CallRelay,
    CallTags,
    Send,
    capability_names,
    dumped,
    in_rounds,
    prompt_answer,
    prompt_rounds,
    tool_answer,
    tool_rounds,
)
from actors.mcp.inputs import CallInputs
from actors.mcp.tls import default_ssl_context
from actors.tools import ErrorType, ToolResult

__all__ = ["FORWARDED_HEADER", "Forwarder", "is_unreachable"]

logger = logging.getLogger(__name__)

FORWARDED_HEADER = "x-mcp-actors-forwarded"
"""Set (to the sending replica's id) on a forwarded request: the owner never forwards it on."""

_E = TypeVar("_E", bound=BaseException)
_R = TypeVar("_R")

_ERA = "2026-07-28"
_CONNECT_TIMEOUT = 5.0
_CLOSE_WAIT = 2.0
"""Seconds a failed call waits for its broken client's task to say why it ended."""


def is_unreachable(result: ToolResult) -> bool:
    """Whether ``result`` says the owner could not be reached: the request never ran there."""
    return bool(result.metadata.get("unreachable"))


@dataclass(eq=False)
class _Link:
    """The client to one owner address, held open by ``task`` until ``closing`` is set."""

    loop: asyncio.AbstractEventLoop
    ready: asyncio.Future[Client]
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    failure: BaseException | None = None
    """Why the client ended on its own (its transport failed), if it did."""

    def close(self) -> None:
        """Let the holding task leave the client (from any thread)."""
        if self.loop.is_closed():
            return
        # RuntimeError: the loop closed meanwhile, and its tasks went with it.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.closing.set)


class Forwarder:
    """Sends requests to other replicas as this replica (``replica_id``), with ``token`` (the
    replicas' shared credential, or the static token). Each request carries its caller in its
    ``_meta`` (``caller``, from the gateway: `ServedGateway.caller_meta`), for the owner to
    serve it as that caller's."""

    def __init__(self, replica_id: str, token: str | None = None) -> None:
        self.replica_id = replica_id
        self._headers = {FORWARDED_HEADER: replica_id}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        # Built here, on the caller's thread: never on the event loop that forwards.
        self._ssl: ssl.SSLContext = default_ssl_context()
        self._lock = threading.Lock()
        self._links: dict[tuple[str, frozenset[str]], _Link] = {}
        """By owner address and the client capabilities its client declares."""
        self._tags = CallTags()

    @property
    def addresses(self) -> list[str]:
        """The owner addresses a client is open (or opening) to."""
        with self._lock:
            return sorted({address for address, _ in self._links})

    def close_address(self, address: str) -> None:
        """Close the clients to ``address`` (its owner changed); the next call there opens one."""
        with self._lock:
            links = [self._links.pop(key) for key in list(self._links) if key[0] == address]
        for link in links:
            link.close()

    def close(self) -> None:
        """Close every client (on shutdown; from any thread). Idempotent."""
        with self._lock:
            links = list(self._links.values())
            self._links.clear()
        for link in links:
            link.close()

    def _drop(self, key: tuple[str, frozenset[str]], link: _Link) -> None:
        """Close ``link`` if it is still the one for ``key`` (a newer one is left alone)."""
        with self._lock:
            if self._links.get(key) is link:
                del self._links[key]
        link.close()

    def _link(self, key: tuple[str, frozenset[str]]) -> _Link:
        """The client for ``key`` (an address, the capabilities it declares) on the running
        loop: the open one, or a new one."""
        loop = asyncio.get_running_loop()
        stale: _Link | None = None
        with self._lock:
            link = self._links.get(key)
            if link is not None and (link.loop is not loop or (link.task is not None and link.task.done())):
                stale, link = link, None
            if link is None:
                link = _Link(loop, loop.create_future())
                link.task = loop.create_task(self._hold(key, link), name=f"forward to {key[0]}")
                self._links[key] = link
        if stale is not None:
            stale.close()
        return link

    async def _hold(self, key: tuple[str, frozenset[str]], link: _Link) -> None:
        """Open the client for ``key``, hand it over, and keep it open until told to close."""
        address, capabilities = key
        try:
            async with httpx2.AsyncClient(
                headers=self._headers,
                # Each call is bounded by its own timeout (`_send`); the connect is bounded here.
                timeout=httpx2.Timeout(None, connect=_CONNECT_TIMEOUT),
                verify=self._ssl,
            ) as http:
                transport = streamable_http_client(address, http_client=http, terminate_on_close=False)
                # The callbacks only make the client declare the capabilities: rounds of input
                # are answered by the calls themselves (`in_rounds`), never through them.
                async with Client(
                    transport,
                    mode=_ERA,
                    cache=None,
                    logging_callback=self._tags.on_log,
                    sampling_callback=_unused if "sampling" in capabilities else None,
                    elicitation_callback=_unused if "elicitation" in capabilities else None,
                    list_roots_callback=_unused if "roots" in capabilities else None,
                ) as client:
                    link.ready.set_result(client)
                    await link.closing.wait()
        except Exception as exc:  # the transport's errors, often in exception groups
            link.failure = exc
            logger.debug("the client to %s ended: %s", address, _reason(exc))
            if not link.ready.done():
                link.ready.set_exception(exc)
        finally:
            with self._lock:
                if self._links.get(key) is link:
                    del self._links[key]

    async def call_tool(
        self,
        address: str,
        name: str,
        arguments: dict[str, Any],
        timeout: float,
        *,
        inputs: CallInputs | None = None,
        relay: CallRelay | None = None,
        caller: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """``tools/call`` of ``name`` (the external name) at ``address``: its rounds of input
        answered by ``inputs``, its log messages and progress sent through ``relay``."""
        progress = relay.progress if relay is not None and relay.reports_progress else None
        rounds = functools.partial(tool_rounds, name=name, arguments=arguments, progress=progress)
        return await self._in_rounds(address, timeout, rounds, tool_answer, inputs, relay, caller)

    async def get_prompt(
        self,
        address: str,
        name: str,
        arguments: dict[str, str],
        timeout: float,
        *,
        inputs: CallInputs | None = None,
        relay: CallRelay | None = None,
        caller: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """``prompts/get`` of ``name`` (the external name) at ``address``, as `call_tool`."""
        rounds = functools.partial(prompt_rounds, name=name, arguments=arguments)
        return await self._in_rounds(address, timeout, rounds, prompt_answer, inputs, relay, caller)

    async def _in_rounds(
        self,
        address: str,
        timeout: float,
        rounds: Callable[[Client], Send],
        shape: Callable[[Any], ToolResult],
        inputs: CallInputs | None,
        relay: CallRelay | None,
        caller: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        async def send(client: Client) -> ToolResult:
            answer = await self._tagged(relay, lambda meta: in_rounds(rounds(client), meta, inputs), caller)
            return answer if isinstance(answer, ToolResult) else shape(answer)

        return await self._send(address, timeout, send, capability_names(relay))

    async def resume(
        self,
        address: str,
        params: Any,
        method: str,
        timeout: float,
        relay: CallRelay | None = None,
        caller: Mapping[str, Any] | None = None,
    ) -> Any:
        """The retry ``params`` of a ``method`` request (``tools/call``, ``prompts/get``) held at
        ``address``, sent there as it is; the owner's answer as it is (another round, say).
        Raises `MCPError`: the owner's refusal, or why it could not be reached."""
        answered: list[Any] = []
        refused: list[MCPError] = []
        progress = relay.progress if relay is not None and relay.reports_progress else None

        async def send(client: Client) -> ToolResult:
            if method == "prompts/get":
                rounds = prompt_rounds(client, name=params.name, arguments=params.arguments)
            else:
                rounds = tool_rounds(client, name=params.name, arguments=params.arguments, progress=progress)
            try:
                answered.append(
                    await self._tagged(
                        relay, lambda meta: rounds(params.input_responses, params.request_state, meta), caller
                    )
                )
            except MCPError as exc:
                if exc.error.code == CONNECTION_CLOSED:
                    raise  # the client broke: classified by `_send`
                refused.append(exc)
            return ToolResult.ok({})

        result = await self._send(address, timeout, send, capability_names(relay))
        if refused:
            raise refused[0]
        if answered:
            return answered[0]
        raise MCPError(INTERNAL_ERROR, f"the replica holding this request could not take it: {result.error}")

    async def _tagged(
        self,
        relay: CallRelay | None,
        send: Callable[[RequestParamsMeta], Awaitable[_R]],
        caller: Mapping[str, Any] | None = None,
    ) -> _R:
        """``send(meta)`` with the ``_meta`` that tags the request for ``relay`` and names its
        ``caller``."""
        tag, meta = self._tags.open(relay)
        if caller:
            meta = cast(RequestParamsMeta, {**meta, **caller})
        try:
            return await send(meta)
        finally:
            self._tags.close(tag)

    async def read_resource(
        self, address: str, uri: str, timeout: float, caller: Mapping[str, Any] | None = None
    ) -> ToolResult:
        """``resources/read`` of ``uri`` at ``address``, for ``caller``."""

        async def send(client: Client) -> ToolResult:
            meta = cast(RequestParamsMeta, dict(caller)) if caller else None
            result = await client.read_resource(uri, cache_mode="bypass", meta=meta)
            return ToolResult.ok(dumped(result))

        return await self._send(address, timeout, send)

    async def listen(self, address: str, uri: str, acked: Callable[[], None]) -> None:
        """Hold a ``subscriptions/listen`` stream naming ``uri`` at ``address`` (``acked()``
        once it is in place) until it ends, fails, or this is cancelled. Its events are not read
        for anyone: the owner publishes them on the bus, which reaches this replica anyway."""
        key = (address, frozenset[str]())
        link = self._link(key)
        try:
            with anyio.fail_after(_CONNECT_TIMEOUT * 2):
                client = await asyncio.shield(link.ready)
            async with client.listen(resource_subscriptions=[uri]) as stream:
                acked()
                async for _ in stream:
                    pass
        except Exception as exc:  # the transport's errors, often in exception groups
            logger.debug("the listen stream for %s at %s ended: %s", uri, address, _reason(exc))
            if _found(exc, MCPError) is None:
                self._drop(key, link)

    async def _send(
        self,
        address: str,
        timeout: float,
        send: Callable[[Client], Awaitable[ToolResult]],
        capabilities: frozenset[str] = frozenset(),
    ) -> ToolResult:
        start = time.monotonic()
        key = (address, capabilities)
        link = self._link(key)
        try:
            with anyio.fail_after(timeout):
                # Shielded: a caller that gives up does not take the client from the others.
                client = await asyncio.shield(link.ready)
                result = await send(client)
        except TimeoutError:
            return ToolResult.fail(
                ErrorType.TIMEOUT, f"the owner replica at {address} gave no answer within {timeout:g} s"
            )
        except Exception as exc:  # the transport's errors, often in exception groups
            answered = _found(exc, MCPError)
            if answered is not None and answered.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
                raise answered from None
            if answered is not None and answered.error.code != CONNECTION_CLOSED:
                # The owner answered with an error (a name or URI it does not know, say).
                kind = (
                    ErrorType.NOT_FOUND if answered.error.code == INVALID_PARAMS else ErrorType.SERVER_ERROR
                )
                return ToolResult.fail(kind, answered.error.message)
            # The client broke: the next call opens a new one. Its task says why (the waiters
            # hear only "Connection closed"): let it finish, briefly, to classify the failure.
            self._drop(key, link)
            if link.task is not None:
                await asyncio.wait({link.task}, timeout=_CLOSE_WAIT)
            why = link.failure or exc
            if _is_connect_failure(exc) or _is_connect_failure(why):
                return _unreachable(address, why)
            return ToolResult.fail(
                ErrorType.CONNECTION, f"the owner replica at {address} went away mid-request: {_reason(why)}"
            )
        elapsed = (time.monotonic() - start) * 1000.0
        logger.debug("forwarded to %s in %.1f ms", address, elapsed)
        return ToolResult(
            success=result.success,
            output=result.output,
            error=result.error,
            error_type=result.error_type,
            duration_ms=elapsed,
            metadata={**result.metadata, "forwarded_to": address},
        )


async def _never_called(*_: Any) -> Any:
    raise AssertionError("rounds of input are answered by the forwarded call, not by its client")


_unused: Any = _never_called
"""Given as a client's sampling, elicitation or roots callback: only so that it declares them."""


def _unreachable(address: str, exc: BaseException) -> ToolResult:
    return ToolResult.fail(
        ErrorType.CONNECTION,
        f"the owner replica at {address} is unreachable: {_reason(exc)}",
        unreachable=True,
    )


def _is_connect_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it wraps) says no connection was made."""
    return _found(exc, httpx2.ConnectError | httpx2.ConnectTimeout | ConnectionRefusedError) is not None


def _found(exc: BaseException, kind: type[_E] | UnionType) -> _E | None:
    """``exc`` or the first exception of ``kind`` it wraps (in groups, causes, contexts)."""
    todo: list[BaseException] = [exc]
    seen: set[int] = set()
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, kind):
            return current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        todo.extend(inner for inner in (current.__cause__, current.__context__) if inner is not None)
    return None


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__
