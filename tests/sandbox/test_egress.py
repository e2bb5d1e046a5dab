"""The egress proxy over real sockets: tunnels, plain requests, denials before any look-up,
failures, closing, and chaining through an upstream proxy.

The helpers here (loopback echo and HTTP servers, a client on a route's socket) serve
tests/sandbox/test_bridge.py too.
"""

from __future__ import annotations

import http.server
import json
import logging
import os
import shutil
import socket
import socketserver
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from actors.mcp.loop import EventLoop
from actors.sandbox import egress
from actors.sandbox.bridge import SocketRelay
from actors.sandbox.egress import EgressProxy, EgressRoute
from actors.sandbox.egress_upstream import Exemption, Upstream, Upstreams
from actors.sandbox.hosts import AllowList

TIMEOUT = 30.0
"""Generous: a slow, busy machine may take its time, but never forever."""


# -- loopback servers --------------------------------------------------------------------------


class _Echo(socketserver.BaseRequestHandler):
    """Echoes until the client half-closes, then half-closes too."""

    def handle(self) -> None:
        server = self.server
        assert isinstance(server, EchoServer)
        with server.lock:
            server.accepted += 1
        self.request.settimeout(TIMEOUT)
        with_error = False
        try:
            while data := self.request.recv(65536):
                self.request.sendall(data)
            self.request.shutdown(socket.SHUT_WR)
        except OSError:
            with_error = True
        server.ended.append(with_error)


class EchoServer(socketserver.ThreadingTCPServer):
    """A TCP echo server on 127.0.0.1; ``accepted`` counts its connections."""

    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Echo)
        self.lock = threading.Lock()
        self.accepted = 0
        self.ended: list[bool] = []

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class _Origin(http.server.BaseHTTPRequestHandler):
    """Answers every request with JSON saying what it received."""

    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        body = b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while size := int(self.rfile.readline().split(b";")[0], 16):
                body += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b""):
                pass
        elif length := int(self.headers.get("Content-Length", "0")):
            body = self.rfile.read(length)
        seen = {
            "method": self.command,
            "path": self.path,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body": body.decode(),
        }
        answer = json.dumps(seen).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.send_header("Keep-Alive", "timeout=5")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer)

    do_GET = do_POST = do_HEAD = do_PUT = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


class OriginServer(http.server.ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 that says what it received."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Origin)

    @property
    def port(self) -> int:
        return int(self.server_address[1])


@contextmanager
def serving(server: socketserver.BaseServer) -> Iterator[Any]:
    """Run ``server`` on a thread; stop it and join every thread of it afterwards."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="test-server")
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()  # joins its request threads
        thread.join(TIMEOUT)


@contextmanager
def tcp_front(route: EgressRoute) -> Iterator[int]:
    """A loopback TCP port relayed to ``route`` (the bridge's relay, in this process)."""
    listener = socket.create_server(("127.0.0.1", 0))
    relay = SocketRelay([listener], str(route.socket_path))
    thread = threading.Thread(target=relay.serve, name="test-relay")
    port = int(listener.getsockname()[1])
    thread.start()
    try:
        yield port
    finally:
        relay.close()
        thread.join(TIMEOUT)
        assert not thread.is_alive()


def closed_port() -> int:
    """A loopback port where nothing listens (bound once, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- clients -------------------------------------------------------------------------------------


def connect(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(TIMEOUT)
    sock.connect(str(path))
    return sock


def read_head(sock: socket.socket) -> tuple[int, bytes, bytes]:
    """The status, the head and whatever came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"the connection closed before a whole head: {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), head, rest


def read_to_end(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def exchange(path: Path, request: bytes) -> tuple[int, bytes, bytes]:
    """Send ``request`` on a new connection; the answer's status, head and body (to its end)."""
    with connect(path) as sock:
        sock.sendall(request)
        status, head, rest = read_head(sock)
        return status, head, rest + read_to_end(sock)


def tunnel(path: Path, authority: str) -> tuple[socket.socket, int, bytes]:
    """A CONNECT on a new connection: the socket, the status and the answer's body."""
    sock = connect(path)
    sock.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
    status, _, rest = read_head(sock)
    if status != 200:
        rest += read_to_end(sock)
    return sock, status, rest


def assert_ended(sock: socket.socket) -> None:
    """The peer ended the connection: the end of the stream, or a reset."""
    with suppress(ConnectionResetError):
        assert sock.recv(100) == b""


def echo_through(sock: socket.socket, payload: bytes) -> bytes:
    """Send ``payload``, half-close, read the echo to its end."""
    sock.sendall(payload)
    sock.shutdown(socket.SHUT_WR)
    return read_to_end(sock)


# -- fixtures ------------------------------------------------------------------------------------


@pytest.fixture
def folder() -> Iterator[Path]:
    """A short private folder for sockets (a Unix socket's path has at most 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="egress-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def proxy() -> Iterator[EgressProxy]:
    proxy = EgressProxy(EventLoop.start, environ={})
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.close()


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    with serving(EchoServer()) as server:
        yield server


@pytest.fixture
def origin() -> Iterator[OriginServer]:
    with serving(OriginServer()) as server:
        yield server


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every name that anything in this process resolves while the test runs."""
    seen: list[str] = []
    real = socket.getaddrinfo

    def recording(host: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(host.decode() if isinstance(host, bytes) else str(host))
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", recording)
    return seen


def open_route(proxy: EgressProxy, folder: Path, *entries: str, namespace: str = "gh") -> EgressRoute:
    return proxy.open_route(namespace, AllowList.parse(entries), folder / f"{namespace}.sock")


# -- tunnels -------------------------------------------------------------------------------------


def test_an_allowed_connect_relays_bytes_both_ways_with_half_close(
    proxy: EgressProxy, folder: Path, echo: EchoServer
) -> None:
    route = open_route(proxy, folder, f"127.0.0.1:{echo.port}")
    sock, status, _ = tunnel(route.socket_path, f"127.0.0.1:{echo.port}")
    with sock:
        assert status == 200
        payload = os.urandom(300_000)  # more than any one buffer
        assert echo_through(sock, payload) == payload
    assert route.connections == 1
    assert route.denials == ()
    assert echo.accepted == 1


def test_a_denied_connect_gets_403_a_denial_and_a_warning(
    proxy: EgressProxy, folder: Path, echo: EchoServer, caplog: pytest.LogCaptureFixture
) -> None:
    route = open_route(proxy, folder, "example.com:443", f"127.0.0.1:{echo.port + 1}")
    with caplog.at_level(logging.WARNING, logger="actors.sandbox.egress"):
        sock, status, body = tunnel(route.socket_path, f"127.0.0.1:{echo.port}")
        sock.close()
    assert status == 403
    assert f"127.0.0.1:{echo.port}" in body.decode()
    assert body.count(b"\n") == 1
    (denial,) = route.denials
    assert (denial.namespace, denial.host, denial.port) == ("gh", "127.0.0.1", echo.port)
    assert denial.reason == "not in the server's network list"
    assert denial.at > 0
    expected = f"sandbox gh: egress to 127.0.0.1:{echo.port} denied (not in the server's network list)"
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [expected]
    assert echo.accepted == 0


def test_a_denied_name_is_never_resolved(
    proxy: EgressProxy, folder: Path, echo: EchoServer, lookups: list[str]
) -> None:
    route = open_route(proxy, folder, "*.example.com", f"localhost:{echo.port}")
    sock, status, body = tunnel(route.socket_path, "exfil.attacker.invalid:443")
    sock.close()
    assert status == 403
    assert b"exfil.attacker.invalid:443" in body
    status, _, body = exchange(
        route.socket_path, b"GET http://secret.exfil.attacker.invalid/x HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    assert status == 403
    assert b"secret.exfil.attacker.invalid:80" in body
    assert [(d.host, d.port) for d in route.denials] == [
        ("exfil.attacker.invalid", 443),
        ("secret.exfil.attacker.invalid", 80),
    ]
    # The control: an allowed name is resolved, and the recorder sees it.
    sock, status, _ = tunnel(route.socket_path, f"localhost:{echo.port}")
    with sock:
        assert status == 200
        assert echo_through(sock, b"ping") == b"ping"
    assert "localhost" in lookups
    assert not [name for name in lookups if "attacker" in name]


def test_an_allowed_but_closed_port_gets_502_with_the_reason(proxy: EgressProxy, folder: Path) -> None:
    port = closed_port()
    route = open_route(proxy, folder, f"127.0.0.1:{port}")
    sock, status, body = tunnel(route.socket_path, f"127.0.0.1:{port}")
    sock.close()
    assert status == 502
    assert f"cannot reach 127.0.0.1:{port}: connection refused" in body.decode()
    assert route.denials == ()


# -- plain requests ------------------------------------------------------------------------------


def test_a_plain_get_is_forwarded_in_origin_form_and_answered(
    proxy: EgressProxy, folder: Path, origin: OriginServer
) -> None:
    route = open_route(proxy, folder, f"127.0.0.1:{origin.port}")
    request = (
        f"GET http://127.0.0.1:{origin.port}/hello?x=1#frag HTTP/1.1\r\n"
        "Host: wrong.example\r\nProxy-Authorization: Basic c2VjcmV0\r\n"
        "Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nX-Kept: yes\r\n\r\n"
    ).encode()
    status, head, body = exchange(route.socket_path, request)
    assert status == 200
    assert b"connection: close" in head.lower()
    assert b"keep-alive" not in head.lower()
    seen = json.loads(body)
    headers = {k.lower(): v for k, v in seen["headers"]}
    assert (seen["method"], seen["path"]) == ("GET", "/hello?x=1")
    assert headers["host"] == f"127.0.0.1:{origin.port}"
    assert headers["connection"] == "close"
    assert headers["x-kept"] == "yes"
    assert "proxy-authorization" not in headers
    assert "x-hop" not in headers


@pytest.mark.parametrize(
    ("framing", "body"),
    [
        ("Content-Length: 11\r\n", b"hello world"),
        ("Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"),
    ],
)
def test_a_request_body_is_forwarded_as_framed(
    proxy: EgressProxy, folder: Path, origin: OriginServer, framing: str, body: bytes
) -> None:
    route = open_route(proxy, folder, f"127.0.0.1:{origin.port}")
    head = f"POST http://127.0.0.1:{origin.port}/submit HTTP/1.1\r\nHost: x\r\n{framing}\r\n".encode()
    status, _, answer = exchange(route.socket_path, head + body)
    assert status == 200
    seen = json.loads(answer)
    assert (seen["method"], seen["path"], seen["body"]) == ("POST", "/submit", "hello world")


def test_a_head_answer_has_no_body(proxy: EgressProxy, folder: Path, origin: OriginServer) -> None:
    route = open_route(proxy, folder, f"127.0.0.1:{origin.port}")
    request = f"HEAD http://127.0.0.1:{origin.port}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    status, head, body = exchange(route.socket_path, request)
    assert status == 200
    assert b"Content-Length" in head
    assert body == b""


MALFORMED = [
    b"garbage\r\n\r\n",
    b"GET /relative HTTP/1.1\r\nHost: example.com\r\n\r\n",
    b"GET https://example.com/ HTTP/1.1\r\n\r\n",
    b"GET http://user@example.com/ HTTP/1.1\r\n\r\n",
    b"GET http://example.com/ HTTP/2.0\r\n\r\n",
    b"GET  http://example.com/ HTTP/1.1\r\n\r\n",
    b"CONNECT example.com HTTP/1.1\r\n\r\n",
    b"CONNECT example.com:0 HTTP/1.1\r\n\r\n",
    b"CONNECT exa$mple.com:443 HTTP/1.1\r\n\r\n",
    b"CONNECT ::1:443 HTTP/1.1\r\n\r\n",
    b"GET http://example.com/ HTTP/1.1\r\nno colon here\r\n\r\n",
    b"GET http://example.com/ HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n",
    b"POST http://example.com/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"POST http://example.com/ HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
    b"POST http://example.com/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
    b"POST http://example.com/ HTTP/1.1\r\nContent-Length: -3\r\n\r\n",
]


@pytest.mark.parametrize("request_bytes", MALFORMED)
def test_a_malformed_request_gets_400_and_the_connection_closes(
    proxy: EgressProxy, folder: Path, request_bytes: bytes
) -> None:
    route = open_route(proxy, folder, "example.com")
    status, _, body = exchange(route.socket_path, request_bytes)  # reads to the end: it closed
    assert status == 400
    assert body.endswith(b"\n")
    assert route.denials == ()


def test_a_head_larger_than_the_limit_gets_400(proxy: EgressProxy, folder: Path) -> None:
    route = open_route(proxy, folder, "example.com")
    request = b"GET http://example.com/ HTTP/1.1\r\n" + b"X-Big: " + b"a" * (70 * 1024) + b"\r\n\r\n"
    with connect(route.socket_path) as sock:
        with suppress(BrokenPipeError, ConnectionResetError):  # it may answer and close first
            sock.sendall(request)
        status, _, body = read_head(sock)
    assert status == 400
    assert b"64 KiB" in body


def test_a_slow_request_head_gets_408(
    proxy: EgressProxy, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(egress, "HEAD_TIMEOUT", 0.5)
    route = open_route(proxy, folder, "example.com")
    with connect(route.socket_path) as sock:
        sock.sendall(b"GET http://example.com/ HTTP/1.1\r\n")
        status, _, body = read_head(sock)
        body += read_to_end(sock)  # and then it closes
    assert status == 408
    assert b"no complete request" in body


# -- closing -------------------------------------------------------------------------------------


def test_a_routes_socket_is_private(proxy: EgressProxy, folder: Path) -> None:
    route = open_route(proxy, folder, "example.com")
    assert stat.S_ISSOCK(route.socket_path.stat().st_mode)
    assert stat.S_IMODE(route.socket_path.stat().st_mode) == 0o600


def test_closing_a_route_ends_its_connections_and_removes_its_socket(
    proxy: EgressProxy, folder: Path, echo: EchoServer
) -> None:
    route = open_route(proxy, folder, f"127.0.0.1:{echo.port}")
    other = open_route(proxy, folder, f"127.0.0.1:{echo.port}", namespace="other")
    sock, status, _ = tunnel(route.socket_path, f"127.0.0.1:{echo.port}")
    with sock:
        assert status == 200
        sock.sendall(b"before")
        assert sock.recv(6) == b"before"
        route.close()
        assert_ended(sock)
    assert not route.socket_path.exists()
    with pytest.raises(OSError):
        connect(route.socket_path)
    route.close()  # idempotent
    # The other route is untouched.
    sock, status, _ = tunnel(other.socket_path, f"127.0.0.1:{echo.port}")
    with sock:
        assert status == 200
        assert echo_through(sock, b"still") == b"still"


def test_closing_the_proxy_ends_everything_and_leaves_no_thread(folder: Path, echo: EchoServer) -> None:
    proxy = EgressProxy(EventLoop.start, environ={})
    proxy.start()
    route = open_route(proxy, folder, f"127.0.0.1:{echo.port}")
    sock, status, _ = tunnel(route.socket_path, f"127.0.0.1:{echo.port}")
    with sock:
        assert status == 200
        assert any(t.name == egress.THREAD_NAME for t in threading.enumerate())
        proxy.close()
        assert_ended(sock)
    assert not any(t.name == egress.THREAD_NAME for t in threading.enumerate())
    assert not route.socket_path.exists()
    proxy.close()  # idempotent
    with pytest.raises(RuntimeError):
        open_route(proxy, folder, "example.com")


def test_a_socket_path_in_use_is_refused_and_a_stale_one_replaced(proxy: EgressProxy, folder: Path) -> None:
    route = open_route(proxy, folder, "example.com")
    with pytest.raises(FileExistsError):
        open_route(proxy, folder, "example.com")  # the same path: a live socket
    assert route.socket_path.exists()
    stale = folder / "stale.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(stale))
    assert stale.exists()
    replaced = proxy.open_route("stale", AllowList.parse(["example.com"]), stale)
    with connect(replaced.socket_path):
        pass
    not_a_socket = folder / "file.sock"
    not_a_socket.write_text("x")
    with pytest.raises(FileExistsError):
        proxy.open_route("file", AllowList(), not_a_socket)
    assert not_a_socket.read_text() == "x"


# -- the upstream proxy --------------------------------------------------------------------------


@contextmanager
def upstream_proxy(folder: Path, *entries: str) -> Iterator[tuple[EgressRoute, int]]:
    """A second egress proxy reachable on a loopback TCP port, as a host's proxy would be."""
    with EgressProxy(EventLoop.start, environ={}) as second:
        route = second.open_route("upstream", AllowList.parse(entries), folder / "upstream.sock")
        with tcp_front(route) as port:
            yield route, port


def test_allowed_traffic_is_chained_through_the_hosts_upstream_proxy(
    folder: Path, echo: EchoServer, origin: OriginServer
) -> None:
    targets = (f"127.0.0.1:{echo.port}", f"127.0.0.1:{origin.port}")
    with upstream_proxy(folder, *targets) as (upstream, port):
        environ = {"https_proxy": f"http://127.0.0.1:{port}", "HTTP_PROXY": f"127.0.0.1:{port}"}
        with EgressProxy(EventLoop.start, environ=environ) as proxy:
            route = open_route(proxy, folder, *targets)
            sock, status, _ = tunnel(route.socket_path, f"127.0.0.1:{echo.port}")
            with sock:
                assert status == 200
                assert echo_through(sock, b"through two proxies") == b"through two proxies"
            assert upstream.connections == 1
            request = f"GET http://127.0.0.1:{origin.port}/chained HTTP/1.1\r\nHost: x\r\n\r\n".encode()
            status, _, body = exchange(route.socket_path, request)
            assert status == 200
            assert json.loads(body)["path"] == "/chained"
            assert upstream.connections == 2
            # What this proxy denies never reaches the upstream one.
            sock, status, _ = tunnel(route.socket_path, "example.org:443")
            sock.close()
            assert status == 403
            assert upstream.connections == 2


def test_the_upstream_proxys_refusal_is_a_502_naming_it(folder: Path, echo: EchoServer) -> None:
    with upstream_proxy(folder, "example.com") as (upstream, port):
        with EgressProxy(EventLoop.start, environ={"HTTPS_PROXY": f"http://u:p@127.0.0.1:{port}"}) as proxy:
            route = open_route(proxy, folder, f"127.0.0.1:{echo.port}")
            sock, status, body = tunnel(route.socket_path, f"127.0.0.1:{echo.port}")
            sock.close()
        assert status == 502
        assert f"the upstream proxy http://127.0.0.1:{port} refused" in body.decode()
        assert "403" in body.decode()
        assert "u:p" not in body.decode()
        assert [d.namespace for d in upstream.denials] == ["upstream"]
    assert echo.accepted == 0


def test_no_proxy_targets_are_reached_directly(folder: Path, echo: EchoServer) -> None:
    with upstream_proxy(folder, f"127.0.0.1:{echo.port}") as (upstream, port):
        environ = {"HTTPS_PROXY": f"http://127.0.0.1:{port}", "NO_PROXY": "localhost,127.0.0.0/8"}
        with EgressProxy(EventLoop.start, environ=environ) as proxy:
            route = open_route(proxy, folder, f"127.0.0.1:{echo.port}")
            sock, status, _ = tunnel(route.socket_path, f"127.0.0.1:{echo.port}")
            with sock:
                assert status == 200
                assert echo_through(sock, b"direct") == b"direct"
        assert upstream.connections == 0
    assert echo.accepted == 1


ENVIRONS: list[tuple[dict[str, str], bool, str | None]] = [
    ({}, True, None),
    ({"HTTPS_PROXY": "http://p:1"}, True, "p:1"),
    ({"HTTPS_PROXY": "http://p:1"}, False, "p:1"),  # the only proxy serves both
    ({"HTTP_PROXY": "http://p:1"}, True, "p:1"),
    ({"HTTP_PROXY": "http://h:1", "HTTPS_PROXY": "http://s:2"}, False, "h:1"),
    ({"HTTP_PROXY": "http://h:1", "HTTPS_PROXY": "http://s:2"}, True, "s:2"),
    ({"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:2"}, True, "lower:1"),
    ({"HTTPS_PROXY": "proxy.corp"}, True, "proxy.corp:80"),
    ({"HTTPS_PROXY": "socks5://p:1"}, True, None),  # not supported: ignored, with a warning
    ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}, True, None),
    ({"HTTPS_PROXY": "http://p:1", "no_proxy": "example.com"}, True, None),
    ({"HTTPS_PROXY": "http://p:1", "no_proxy": ".example.com"}, True, None),
    ({"HTTPS_PROXY": "http://p:1", "no_proxy": "*.example.com"}, True, None),
    ({"HTTPS_PROXY": "http://p:1", "no_proxy": "example.com:8443"}, True, "p:1"),
    ({"HTTPS_PROXY": "http://p:1", "no_proxy": "example.com:443"}, True, None),
    ({"HTTPS_PROXY": "http://p:1", "no_proxy": "ample.com"}, True, "p:1"),
    ({"HTTPS_PROXY": "http://p:1", "no_proxy": "other.org, api.example.com"}, True, None),
]


@pytest.mark.parametrize(("environ", "tunnel_", "expected"), ENVIRONS)
def test_the_upstream_for_api_example_com_443(
    environ: dict[str, str], tunnel_: bool, expected: str | None
) -> None:
    upstream = Upstreams.from_environ(environ).for_target("api.example.com", 443, tunnel=tunnel_)
    assert (None if upstream is None else f"{upstream.host}:{upstream.port}") == expected


EXEMPTIONS: list[tuple[str, str, int, bool]] = [
    ("10.0.0.0/8", "10.1.2.3", 443, True),
    ("10.0.0.0/8", "11.1.2.3", 443, False),
    ("10.0.0.0/8", "ten.example", 443, False),
    ("127.0.0.1", "127.0.0.1", 80, True),
    ("127.0.0.1:80", "127.0.0.1", 81, False),
    ("::1", "::1", 80, True),
    ("[::1]:80", "::1", 80, True),
    ("0.0.1", "10.0.0.1", 80, False),  # an address is no domain suffix
    ("Example.COM", "www.example.com", 80, True),
]


@pytest.mark.parametrize(("entry", "host", "port", "covered"), EXEMPTIONS)
def test_a_no_proxy_entry_covers(entry: str, host: str, port: int, covered: bool) -> None:
    assert Exemption.parse(entry).covers(host, port) is covered


def test_an_upstream_url_carries_its_credentials_as_basic_auth_never_in_its_name() -> None:
    upstream = Upstream.parse("http://us%40er:pa%3Ass@proxy.corp:3128/")
    assert (upstream.host, upstream.port) == ("proxy.corp", 3128)
    assert upstream.authorization == "Basic dXNAZXI6cGE6c3M="  # us@er:pa:ss
    assert str(upstream) == "http://proxy.corp:3128"
    with pytest.raises(ValueError, match="only an http://"):
        Upstream.parse("https://proxy.corp")
