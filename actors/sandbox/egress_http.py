"""The HTTP/1.1 of the egress proxy: proxy request heads, message bodies, relaying.

A client sends one request per connection: ``CONNECT host:port`` (then the connection is a
tunnel, `splice`) or an absolute-form plain request (``GET http://host/path``, sent on by
`forward` in origin-form with ``Connection: close``). What cannot be parsed strictly is
refused (`EgressRefusal`, answered with its status): a lenient proxy is how requests get smuggled
past the check.

Coroutines for one connection's task, on the egress proxy's loop; the values are immutable.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
from dataclasses import dataclass

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteStream

from actors.sandbox.hosts import format_authority, split_authority

__all__ = [
    "CHUNKED",
    "HEAD_LIMIT",
    "STREAM_ERRORS",
    "EgressRefusal",
    "ProxyRequest",
    "encode_head",
    "failure_reason",
    "forward",
    "parse_request",
    "splice",
]

logger = logging.getLogger(__name__)

HEAD_LIMIT = 64 * 1024
"""The largest request (or answer) head, in bytes."""
CHUNKED = "chunked"
"""The framing of a chunked body (`ProxyRequest.body`)."""
# What a connection can fail with on the way: a peer went, or broke the framing mid-stream.
STREAM_ERRORS = (
    OSError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.DelimiterNotFound,
    ValueError,
)

_CHUNK = 64 * 1024
_LINE_LIMIT = 8 * 1024
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_DIGITS = re.compile(r"[0-9]{1,18}")
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,15}")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# About one connection, never sent on (nor are the headers that Connection names).
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te"}
    | {"upgrade"}
)
_STATUS_TEXT = {400: "Bad Request", 403: "Forbidden", 408: "Request Timeout", 502: "Bad Gateway"}
_Headers = tuple[tuple[str, str], ...]


class EgressRefusal(Exception):
    """A request answered with an error status, after which the connection closes."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason

    def response(self) -> bytes:
        """The whole answer: the status and the reason as a one-line text body."""
        body = (self.reason + "\n").encode("utf-8", "replace")
        head = (
            f"HTTP/1.1 {self.status} {_STATUS_TEXT.get(self.status, 'Error')}\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        )
        return head.encode("latin-1") + body


@dataclass(frozen=True)
class ProxyRequest:
    """A parsed proxy request head."""

    method: str
    host: str
    """Normalized (`actors.sandbox.hosts.normalize_host`), as the client named it."""
    port: int
    path: str = ""
    """The origin-form target (``/path?query``); empty for CONNECT."""
    headers: _Headers = ()
    body: int | str = 0
    """The body's length in bytes, or `CHUNKED` (always 0 for CONNECT)."""

    @property
    def tunnel(self) -> bool:
        return self.method == "CONNECT"

    @property
    def authority(self) -> str:
        """``host:port`` (``[v6]:port``)."""
        return format_authority(self.host, self.port)


def parse_request(head: bytes) -> ProxyRequest:
    """The request that ``head`` (without its final blank line) holds; `EgressRefusal` 400 if none."""
    request_line, *lines = head.decode("latin-1").split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
        raise EgressRefusal(400, f"malformed request line {request_line[:80]!r}")
    method, target, _ = parts
    if not target or _CONTROL.search(target):
        raise EgressRefusal(400, "malformed request target")
    headers = _parse_headers(lines, 400)
    try:
        if method == "CONNECT":
            host, port = split_authority(target)
            if port is None:
                raise EgressRefusal(400, "CONNECT needs host:port")
            return ProxyRequest(method, host, port, headers=headers)
        scheme, sep, rest = target.partition("://")
        if not sep or scheme.lower() != "http":
            raise EgressRefusal(
                400, "a proxy request needs an absolute http:// URL (CONNECT for anything else)"
            )
        cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
        authority, path = rest[:cut], rest[cut:].partition("#")[0]
        if "@" in authority:
            raise EgressRefusal(400, "a user name in the URL is not supported")
        host, port = split_authority(authority)
    except ValueError as exc:
        raise EgressRefusal(400, str(exc)) from None
    path = path if path.startswith("/") else "/" + path
    framing = _framing(headers, status=400)
    return ProxyRequest(method, host, port or 80, path, headers, 0 if framing is None else framing)


def _parse_headers(lines: list[str], status: int) -> _Headers:
    headers = []
    for line in lines:
        name, colon, value = line.partition(":")
        # A name that is not a token also refuses obsolete line folding (a leading space).
        if not colon or not _TOKEN.fullmatch(name) or _CONTROL.search(value):
            raise EgressRefusal(status, f"malformed header line {line[:80]!r}")
        headers.append((name, value.strip(" \t")))
    return tuple(headers)


def _framing(headers: _Headers, *, status: int) -> int | str | None:
    """How a message's body ends: a byte count, `CHUNKED`, or None (not said)."""
    codings = [
        c.strip().lower() for k, v in headers if k.lower() == "transfer-encoding" for c in v.split(",")
    ]
    lengths = {c.strip() for k, v in headers if k.lower() == "content-length" for c in v.split(",")}
    if codings:
        # Both, or chunked not last: the classic request-smuggling shapes.
        if lengths or codings[-1] != CHUNKED or codings.count(CHUNKED) != 1:
            raise EgressRefusal(status, "unsupported body framing (Transfer-Encoding)")
        return CHUNKED
    if lengths:
        length = lengths.pop() if len(lengths) == 1 else ""
        if not _DIGITS.fullmatch(length):
            raise EgressRefusal(status, "malformed Content-Length")
        return int(length)
    return None


def _end_to_end(headers: _Headers, *also: str) -> list[tuple[str, str]]:
    """``headers`` without the hop-by-hop ones, those Connection names, and ``also``."""
    named = {t.strip().lower() for k, v in headers if k.lower() == "connection" for t in v.split(",")}
    dropped = _HOP_BY_HOP | named | set(also)
    return [(k, v) for k, v in headers if k.lower() not in dropped]


def encode_head(first: str, headers: list[tuple[str, str]]) -> bytes:
    """A message head: its first line, its headers, the blank line."""
    return "".join([first, "\r\n", *(f"{k}: {v}\r\n" for k, v in headers), "\r\n"]).encode("latin-1")


def failure_reason(exc: BaseException) -> str:
    """A short reason for a failed connection attempt or exchange."""
    if isinstance(exc, socket.gaierror):
        return "its name does not resolve"
    if isinstance(exc, anyio.EndOfStream | anyio.IncompleteRead):
        return "the connection closed"
    cause = exc.__cause__
    if isinstance(exc, OSError) and isinstance(cause, OSError):  # anyio's "all attempts failed"
        exc = cause
    if isinstance(exc, OSError) and exc.errno:  # asyncio's message hides the reason: errno has it
        return os.strerror(exc.errno).lower()
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


async def splice(a: anyio.abc.ByteStream, b: anyio.abc.ByteStream) -> None:
    """Relay both ways until both directions have ended (each end passed on as a half-close);
    a broken side ends both."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump, a, b, tg.cancel_scope)
        tg.start_soon(_pump, b, a, tg.cancel_scope)


async def _pump(
    source: anyio.abc.ByteReceiveStream, sink: anyio.abc.ByteStream, both: anyio.CancelScope
) -> None:
    try:
        while True:
            try:
                data = await source.receive(_CHUNK)
            except anyio.EndOfStream:
                break
            await sink.send(data)
        await sink.send_eof()
    except STREAM_ERRORS:
        both.cancel()


async def forward(
    client: BufferedByteStream,
    request: ProxyRequest,
    remote: BufferedByteStream,
    *,
    absolute: bool = False,
    proxy_authorization: str | None = None,
) -> None:
    """Send ``request`` (its body read from ``client``) on ``remote`` and relay the answer.

    ``absolute``: ``remote`` is an upstream proxy, which takes the absolute-form target.
    Raises `EgressRefusal` 502 while nothing of an answer has been relayed.
    """
    host = request.authority.removesuffix(":80") if request.port == 80 else request.authority
    headers = [("Host", host), *_end_to_end(request.headers, "host")]
    if proxy_authorization is not None:
        headers.append(("Proxy-Authorization", proxy_authorization))
    headers.append(("Connection", "close"))
    target = f"http://{host}{request.path}" if absolute else request.path
    await remote.send(encode_head(f"{request.method} {target} HTTP/1.1", headers))
    refusal: EgressRefusal | None = None
    async with anyio.create_task_group() as tg:

        async def send_body() -> None:
            try:
                await _relay_body(client, remote, request.body)
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.DelimiterNotFound, ValueError):
                tg.cancel_scope.cancel()  # the client went, or broke its framing: no answer
            except STREAM_ERRORS:
                pass  # the origin stopped reading: it may still answer

        tg.start_soon(send_body)
        try:
            await _relay_answer(remote, client, request.method)
        except EgressRefusal as exc:
            refusal = exc
        except STREAM_ERRORS as exc:  # a side went mid-answer: both close
            logger.debug("an egress answer ended early: %r", exc)
        finally:
            tg.cancel_scope.cancel()
    if refusal is not None:
        raise refusal


async def _relay_answer(remote: BufferedByteStream, client: anyio.abc.ByteSendStream, method: str) -> None:
    """Relay the answer with ``Connection: close`` (interim ``1xx`` ones first)."""
    relayed = False
    while True:
        try:
            status_line, status, headers, framing = await _read_answer_head(remote)
        except EgressRefusal:
            if relayed:
                raise ConnectionError("the origin broke its answer") from None
            raise
        interim = 100 <= status < 200 and status != 101
        kept = _end_to_end(headers) + ([] if interim else [("Connection", "close")])
        await client.send(encode_head(status_line, kept))
        relayed = True
        if not interim:
            break
    if method == "HEAD" or status in (204, 304):
        return
    # No Upgrade is sent on, so a 101 is a broken origin: relay what it sends, to its end.
    await _relay_body(remote, client, None if status == 101 else framing)


async def _read_answer_head(remote: BufferedByteStream) -> tuple[str, int, _Headers, int | str | None]:
    try:
        head = (await remote.receive_until(b"\r\n\r\n", HEAD_LIMIT)).decode("latin-1")
    except STREAM_ERRORS as exc:
        raise EgressRefusal(502, f"the origin gave no answer: {failure_reason(exc)}") from None
    status_line, *lines = head.split("\r\n")
    version, _, rest = status_line.partition(" ")
    if not version.startswith("HTTP/1.") or not _DIGITS.fullmatch(rest[:3]):
        raise EgressRefusal(502, f"the origin answered with a malformed status line {status_line[:80]!r}")
    headers = _parse_headers(lines, 502)
    return status_line, int(rest[:3]), headers, _framing(headers, status=502)


async def _relay_body(
    source: BufferedByteStream, sink: anyio.abc.ByteSendStream, framing: int | str | None
) -> None:
    """Copy one message body as it is framed (chunks go as they come); None: to the end."""
    if framing is None:
        with contextlib.suppress(anyio.EndOfStream):
            while True:
                await sink.send(await source.receive(_CHUNK))
    elif framing == CHUNKED:
        while True:
            line = await source.receive_until(b"\r\n", _LINE_LIMIT)
            await sink.send(line + b"\r\n")
            size = line.split(b";", 1)[0].strip(b" \t")
            if not _CHUNK_SIZE.fullmatch(size):
                raise ValueError(f"malformed chunk size line {line[:40]!r}")
            if int(size, 16) == 0:
                break
            await _relay_exactly(source, sink, int(size, 16) + 2)  # the data and its CRLF
        while line := await source.receive_until(b"\r\n", _LINE_LIMIT):  # the trailer section
            await sink.send(line + b"\r\n")
        await sink.send(b"\r\n")
    else:
        assert isinstance(framing, int)
        await _relay_exactly(source, sink, framing)


async def _relay_exactly(source: BufferedByteStream, sink: anyio.abc.ByteSendStream, count: int) -> None:
    while count > 0:
        data = await source.receive(min(count, _CHUNK))
        count -= len(data)
        await sink.send(data)
