"""`EgressProxy`: the HTTP proxy through which sandboxed servers reach the hosts they may.

The proxy runs on a thread of its own (a `LoopThread` named ``mcp-actors-egress``: the caller's
`actors.mcp.loop.EventLoop.start`, never the runtime's shared loop). Each sandboxed server gets
an `EgressRoute`: a Unix socket that only its sandbox can reach, so whatever arrives there is
that server's traffic, checked against its `AllowList`::

    server ──TCP 127.0.0.1:3128──▶ bridge (inside) ──Unix socket──▶ route ──▶ allowed host

A route speaks HTTP/1.1 proxy requests (`actors.sandbox.egress_http`): ``CONNECT host:port``
(a tunnel, relayed both ways with half-close) and absolute-form plain requests (``GET
http://host/path``, sent on in origin-form with ``Connection: close``). The allow-list is
checked on the name the client asked for, before any DNS look-up: a denied name is never
resolved, so a sandbox cannot leak data through the host's resolver. A denial answers ``403``
and is logged and kept (`EgressRoute.denials`); an allowed host that cannot be reached answers
``502``; a malformed request ``400``, a slow one ``408``.

When the host's environment (read once, when the proxy is made) names an upstream proxy,
allowed traffic is chained through it (`actors.sandbox.egress_upstream`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import socket
import stat
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel
from anyio.streams.buffered import BufferedByteStream

from actors.sandbox.egress_http import (
    HEAD_LIMIT,
    STREAM_ERRORS,
    EgressRefusal,
    ProxyRequest,
    encode_head,
    failure_reason,
    forward,
    parse_request,
    splice,
)
from actors.sandbox.egress_upstream import Upstream, Upstreams
from actors.sandbox.hosts import AllowList

__all__ = [
    "CONNECT_TIMEOUT",
    "DENIALS_KEPT",
    "HEAD_TIMEOUT",
    "THREAD_NAME",
    "Denial",
    "EgressProxy",
    "EgressRoute",
    "LoopThread",
    "StartLoop",
]


_T = TypeVar("_T")


class LoopThread(Protocol):
    """A thread running an event loop (`actors.mcp.loop.EventLoop` is one), given to the proxy
    by the layer that owns the loops, so that this layer imports none of them."""

    @property
    def running(self) -> bool: ...

    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None: ...

    def run(self, fn: Callable[..., Awaitable[_T]], *args: Any, timeout: float = ...) -> _T: ...

    def stop(self, timeout: float = ...) -> None: ...


StartLoop = Callable[[str], LoopThread]
"""Starts a `LoopThread` of the given name."""


logger = logging.getLogger(__name__)

HEAD_TIMEOUT = 30.0
"""Seconds a client has to send a whole request head."""
CONNECT_TIMEOUT = 15.0
"""Seconds to reach a host (or, through an upstream proxy, to have its tunnel)."""
DENIALS_KEPT = 50
"""How many of a route's last denials it keeps."""
THREAD_NAME = "mcp-actors-egress"
_DENIED = "not in the server's network list"
_LINGER = 2.0
_LINGER_LIMIT = 1024 * 1024


@dataclass(frozen=True)
class Denial:
    """One refused request of a sandboxed server."""

    namespace: str
    host: str
    port: int
    reason: str
    at: float
    """Wall-clock time (``time.time()``)."""


async def _dial(upstreams: Upstreams, request: ProxyRequest) -> tuple[BufferedByteStream, Upstream | None]:
    """A connection for ``request``: to its host, or to the upstream proxy (through which a
    CONNECT request gets its tunnel first). Raises `EgressRefusal` 502."""
    via = upstreams.for_target(request.host, request.port, tunnel=request.tunnel)
    where = request.authority if via is None else f"{request.authority} through {via}"
    stream: BufferedByteStream | None = None
    try:
        with anyio.fail_after(CONNECT_TIMEOUT):
            host, port = (request.host, request.port) if via is None else (via.host, via.port)
            stream = BufferedByteStream(await anyio.connect_tcp(host, port))
            if via is not None and request.tunnel:
                await _open_tunnel(stream, via, request.authority)
        return stream, via
    except BaseException as exc:
        if stream is not None:
            await anyio.aclose_forcefully(stream)
        if isinstance(exc, TimeoutError):
            raise EgressRefusal(
                502, f"cannot reach {where}: no answer within {CONNECT_TIMEOUT:g} s"
            ) from None
        if isinstance(exc, STREAM_ERRORS):
            raise EgressRefusal(502, f"cannot reach {where}: {failure_reason(exc)}") from None
        raise


async def _open_tunnel(stream: BufferedByteStream, via: Upstream, target: str) -> None:
    """Ask the upstream proxy on ``stream`` for a tunnel to ``target``."""
    auth = [("Proxy-Authorization", via.authorization)] if via.authorization else []
    await stream.send(encode_head(f"CONNECT {target} HTTP/1.1", [("Host", target), *auth]))
    status_line = (await stream.receive_until(b"\r\n\r\n", HEAD_LIMIT)).split(b"\r\n")[0]
    status = status_line.decode("latin-1").split(" ")
    if len(status) < 2 or not status[0].startswith("HTTP/1.") or not status[1].startswith("2"):
        answer = status_line[:120].decode("latin-1")
        raise EgressRefusal(502, f"the upstream proxy {via} refused {target}: {answer}")


class EgressRoute:
    """One sandboxed server's way out: a Unix socket whose traffic is checked against its
    `AllowList`. Made by `EgressProxy.open_route`.

    Its connections, their count and its denials are owned by the proxy's loop thread;
    `connections` and `denials` are read from any thread (immutable snapshots). `close` is
    thread-safe.
    """

    def __init__(
        self,
        loop: LoopThread,
        namespace: str,
        allow: AllowList,
        socket_path: Path,
        upstreams: Upstreams,
        forget: Callable[[EgressRoute], None],
    ) -> None:
        self.namespace = namespace
        self.allow = allow
        self.socket_path = socket_path
        self._loop = loop
        self._upstreams = upstreams
        self._forget = forget
        self._lock = threading.Lock()
        self._closed = False
        self._inode: int | None = None
        # Loop thread only (made there: anyio needs its running loop).
        self._scope: anyio.CancelScope | None = None
        self._done: anyio.Event | None = None
        self._connections = 0
        self._denials: tuple[Denial, ...] = ()

    @property
    def connections(self) -> int:
        """How many connections the route has taken so far."""
        return self._connections

    @property
    def denials(self) -> tuple[Denial, ...]:
        """The last `DENIALS_KEPT` refused requests, oldest first."""
        return self._denials

    def close(self, timeout: float = 10.0) -> None:
        """Stop listening, end every connection of the route, remove its socket. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            if self._loop.running:
                self._loop.run(self._stop, timeout=timeout)
        except (TimeoutError, ConnectionError, RuntimeError) as exc:
            logger.warning("sandbox %s: its egress route did not close cleanly: %s", self.namespace, exc)
        finally:
            self._remove_socket_file()
            self._forget(self)

    def _listen(self) -> socket.socket:
        """Bind and listen at `socket_path`, mode 0600 (on the caller's thread: file system work)."""
        path = os.fspath(self.socket_path)
        _remove_stale_socket(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(path)
            # Not listening yet, so nobody can connect before the mode is set.
            os.chmod(path, 0o600)
            self._inode = os.stat(path).st_ino
            sock.listen(128)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            self._remove_socket_file()
            raise
        return sock

    def _remove_socket_file(self) -> None:
        with contextlib.suppress(OSError):
            if self._inode is not None and os.stat(self.socket_path).st_ino == self._inode:
                os.unlink(self.socket_path)

    async def _start(self, sock: socket.socket) -> None:
        """On the loop: take the listening socket and serve it until `_stop`."""
        listener = await anyio.abc.SocketListener.from_socket(sock)
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()
        self._loop.spawn(self._serve, listener, name=f"egress route {self.namespace}")

    async def _stop(self) -> None:
        if self._scope is not None and self._done is not None:
            self._scope.cancel()
            await self._done.wait()

    async def _serve(self, listener: anyio.abc.SocketListener) -> None:
        assert self._scope is not None and self._done is not None
        try:
            with self._scope:
                # The listener closes first, then the connections end (the group's cancel).
                async with anyio.create_task_group() as tg, listener:
                    while True:
                        try:
                            stream = await listener.accept()
                        except anyio.BrokenResourceError as exc:  # out of descriptors, say: retry
                            logger.error("sandbox %s: egress route cannot accept: %s", self.namespace, exc)
                            await anyio.sleep(1.0)
                            continue
                        tg.start_soon(self._handle, stream)
        finally:
            self._done.set()

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        """One client connection: one request, answered or relayed, then closed."""
        self._connections += 1
        async with BufferedByteStream(stream) as client:
            try:
                await self._serve_request(client)
            except EgressRefusal as refusal:
                if refusal.status == 502:
                    logger.info("sandbox %s: egress failed: %s", self.namespace, refusal.reason)
                with contextlib.suppress(*STREAM_ERRORS):
                    await client.send(refusal.response())
                    await _linger(client)
            except STREAM_ERRORS as exc:
                logger.debug("sandbox %s: an egress connection ended: %r", self.namespace, exc)
            except Exception:  # a bug must end this connection, never the route
                logger.exception("sandbox %s: an egress connection failed", self.namespace)

    async def _serve_request(self, client: BufferedByteStream) -> None:
        try:
            with anyio.fail_after(HEAD_TIMEOUT):
                head = await client.receive_until(b"\r\n\r\n", HEAD_LIMIT)
        except TimeoutError:
            raise EgressRefusal(408, f"no complete request within {HEAD_TIMEOUT:g} s") from None
        except anyio.DelimiterNotFound:
            raise EgressRefusal(400, f"request head larger than {HEAD_LIMIT // 1024} KiB") from None
        request = parse_request(head)
        # The check comes before any look-up of the name: a denied name is never resolved.
        if not self.allow.allows(request.host, request.port):
            self._deny(request)
            raise EgressRefusal(403, f"egress to {request.authority} is not allowed for this server")
        remote, via = await _dial(self._upstreams, request)
        async with remote:
            if request.tunnel:
                await client.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await splice(client, remote)
            else:
                auth = via.authorization if via is not None else None
                await forward(client, request, remote, absolute=via is not None, proxy_authorization=auth)

    def _deny(self, request: ProxyRequest) -> None:
        denial = Denial(self.namespace, request.host, request.port, _DENIED, time.time())
        self._denials = (*self._denials[-(DENIALS_KEPT - 1) :], denial)
        logger.warning("sandbox %s: egress to %s denied (%s)", self.namespace, request.authority, _DENIED)

    def __repr__(self) -> str:
        return f"<EgressRoute {self.namespace} at {self.socket_path}>"


async def _linger(client: BufferedByteStream) -> None:
    """End the sending side and read what the client still sends, for a moment: closing with
    unread data resets the connection, and the client might lose its answer."""
    await client.send_eof()
    read = 0
    with anyio.move_on_after(_LINGER):
        while read < _LINGER_LIMIT:
            read += len(await client.receive())


def _remove_stale_socket(path: str) -> None:
    """Remove a socket file that nobody listens on; refuse to replace anything else."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise FileExistsError(errno.EEXIST, "not a socket, not replacing it", path)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except ConnectionRefusedError:
        os.unlink(path)
        return
    finally:
        probe.close()
    raise FileExistsError(errno.EEXIST, "a live socket is listening there", path)


class EgressProxy:
    """The HTTP proxy that sandboxed servers reach the network through, on its own thread.

    Thread-safe: every method may be called from any thread. Its routes and loop are guarded by
    a lock; what happens on the connections is owned by the loop thread.
    """

    def __init__(self, start_loop: StartLoop, *, environ: Mapping[str, str] | None = None) -> None:
        """A stopped proxy whose thread ``start_loop`` starts; ``environ`` (default: this
        process's environment, read now) names the upstream proxy, if any."""
        self._start_loop = start_loop
        self._upstreams = Upstreams.from_environ(os.environ if environ is None else environ)
        self._lock = threading.Lock()
        self._loop: LoopThread | None = None
        self._routes: set[EgressRoute] = set()
        self._closed = False

    def start(self, timeout: float = 10.0) -> None:
        """Start the proxy's thread; return once it accepts routes."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the egress proxy is closed")
            if self._loop is None:
                self._loop = self._start_loop(THREAD_NAME)
            loop = self._loop
        loop.run(anyio.lowlevel.checkpoint, timeout=timeout)

    def open_route(
        self, namespace: str, allow: AllowList, socket_path: Path, timeout: float = 10.0
    ) -> EgressRoute:
        """Listen at ``socket_path`` (in a folder the caller made) for ``namespace``'s traffic;
        return once it listens."""
        with self._lock:
            loop = self._loop
            if loop is None or self._closed:
                raise RuntimeError("the egress proxy is not running")
        route = EgressRoute(loop, namespace, allow, Path(socket_path), self._upstreams, self._forget)
        sock = route._listen()
        try:
            loop.run(route._start, sock, timeout=timeout)
        except BaseException:
            sock.close()
            route.close(timeout)
            raise
        with self._lock:
            closed = self._closed
            if not closed:
                self._routes.add(route)
        if closed:
            route.close(timeout)
            raise RuntimeError("the egress proxy closed while the route opened")
        logger.info("sandbox %s: egress route at %s for %s", namespace, socket_path, allow)
        return route

    def close(self, timeout: float = 10.0) -> None:
        """Close every route and connection and join the proxy's thread. Idempotent."""
        with self._lock:
            self._closed = True
            routes, self._routes = list(self._routes), set()
            loop, self._loop = self._loop, None
        for route in routes:
            route.close(timeout)
        if loop is not None:
            loop.stop(timeout)

    def _forget(self, route: EgressRoute) -> None:
        with self._lock:
            self._routes.discard(route)

    def __enter__(self) -> EgressProxy:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
