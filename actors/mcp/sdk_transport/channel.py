"""The channel a session's messages travel on: a stdio server process, or an HTTP client.

`prepare` does what connecting needs from the file system (the command's ``PATH`` lookup, the
default SSL context) on a worker thread, before the owner starts; `open_channel` then builds the
SDK transport for the target on the loop, wrapped so that the `PeerWatch` sees it (`observed`).
Stdio runs on a stream of our own (`actors.mcp.stdio_stream`), not the SDK's ``stdio_client``.

`prepare` crosses threads: the look-ups run on one worker thread per loop (anyio's to_thread,
results handed back by anyio). The rest runs on the event-loop thread.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

# Loaded here, on the importing thread, because it would otherwise load on the event loop:
# httpx2 imports its HTTP core when it builds its first client.
import httpcore2  # noqa: F401
import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from actors.mcp.loop import EventLoop
from actors.mcp.redaction import Redactor
from actors.mcp.sdk_options import HTTPEndpoint, SDKOptions, StdioCommand
from actors.mcp.sdk_transport.observed import ObservedAuth, ObservedTransport
from actors.mcp.sdk_transport.peer import PeerWatch
from actors.mcp.state import state_dir
from actors.mcp.stdio_process import StdioProcess, command_line, resolve_command, sandboxed_command_line
from actors.mcp.stdio_stream import stdio_stream
from actors.mcp.tls import default_ssl_context
from actors.mcp.transport import StartRefused
from actors.sandbox.boundary import SharedProxy, build_boundary
from actors.sandbox.profile import SandboxProfile
from actors.sandbox.support import SandboxUnavailable

__all__ = ["Prepared", "open_channel", "prepare"]

logger = logging.getLogger(__name__)

# The egress proxy of the sandboxed servers with a network list: one per process, on a loop
# thread of its own (never the servers' shared loop), running while any route is open.
_EGRESS = SharedProxy(EventLoop.start)

_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)

# One worker thread per event loop serves the transports' short blocking look-ups; anyio keeps
# each worker thread until its loop ends, so letting them run in parallel would only add threads.
_LOOKUP_SLOTS: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar("mcp_actors_lookups")

_T = TypeVar("_T")


@dataclass(frozen=True)
class Prepared:
    """What the file system said: the command's path (stdio) or the SSL context (HTTP)."""

    command: str = ""
    ssl_context: ssl.SSLContext | None = None


async def prepare(target: StdioCommand | HTTPEndpoint, options: SDKOptions, label: str) -> Prepared:
    """Look up what connecting needs from the file system, on a worker thread."""
    if isinstance(target, StdioCommand):
        return Prepared(command=await _off_loop(resolve_command, target, label))
    return Prepared(ssl_context=options.ssl_context or await _off_loop(default_ssl_context))


async def open_channel(
    stack: AsyncExitStack,
    target: StdioCommand | HTTPEndpoint,
    options: SDKOptions,
    prepared: Prepared,
    watch: PeerWatch,
    redact: Redactor,
) -> ObservedTransport:
    """The SDK transport for ``target``, wrapped so that ``watch`` sees it start, end and tear down."""
    inner: AbstractAsyncContextManager[Any]
    if isinstance(target, StdioCommand):
        argv = command_line(target, prepared.command)
        if target.sandbox is not None:
            argv = await _sandboxed(stack, target, target.sandbox, prepared.command, watch.label, options)
        stdio = StdioProcess(
            argv,
            env=target.env,
            cwd=target.cwd,
            label=watch.label,
            redact=redact,
            close_grace=options.close_grace,
            kill_grace=options.kill_grace,
            on_exit=watch.process_exited,
        )
        watch.process_started(stdio)
        await stdio.open_stderr(stack)
        inner = stdio_stream(
            stdio, max_message_bytes=options.max_message_bytes, on_failure=watch.stdout_failed
        )
    else:
        context = prepared.ssl_context
        assert context is not None
        headers = dict(target.headers) if target.headers is not None else None
        make_auth = options.auth
        auth = ObservedAuth(make_auth() if make_auth is not None else None, watch)
        if target.kind == "sse":
            inner = sse_client(
                target.url, headers=headers, httpx_client_factory=_client_factory(context), auth=auth
            )
        else:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=_HTTP_TIMEOUT, verify=context, auth=auth)
            )
            inner = streamable_http_client(target.url, http_client=http)
    return ObservedTransport(inner, watch)


async def _sandboxed(
    stack: AsyncExitStack,
    target: StdioCommand,
    profile: SandboxProfile,
    resolved: str,
    label: str,
    options: SDKOptions,
) -> list[str]:
    """The command line of a sandboxed start: its `Boundary` built on a worker thread, and
    taken down there after the process (``stack`` unwinds the process first)."""
    namespace = options.server_name or label
    build = partial(
        build_boundary,
        namespace,
        profile,
        resolved,
        target.args,
        target.env,
        target.cwd,
        state=state_dir(),
        proxy=_EGRESS,
    )
    # Shielded: a caller cancelled meanwhile must not lose a boundary it would never take down.
    with anyio.CancelScope(shield=True):
        try:
            boundary = await anyio.to_thread.run_sync(build)
        except (SandboxUnavailable, ValueError) as exc:
            raise StartRefused(f"{label}: {exc}") from exc
        except OSError as exc:
            raise StartRefused(f"{label}: the sandbox could not be built: {exc}") from exc

    async def take_down() -> None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(boundary.close)

    stack.push_async_callback(take_down)
    await anyio.lowlevel.checkpoint()
    logger.info("%s: sandboxed (%s)", label, boundary.limits.how)
    return sandboxed_command_line(boundary.argv, boundary.wrapper_options)


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
