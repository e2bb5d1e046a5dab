"""`stdio_stream`: the message streams of a stdio server, for ``mcp.Client``, in place of the
SDK's ``stdio_client``.

Newline-delimited JSON-RPC on the server's stdin and stdout, as the SDK speaks it, with five
differences that matter on a loop shared by every server:

- the server is started off the loop (`actors.mcp.stdio_process`); the SDK forks on it;
- reading is linear in the size of a message: each chunk is searched once for newlines and a
  line is joined once (the SDK re-splits its whole buffer for every 64 KB chunk, which made one
  20 MB message take seconds), and parsed from its bytes, without a decoded copy;
- a big message (`actors.mcp.frames.BIG_FRAME_BYTES` or more) is parsed and encoded on a
  worker thread, in pieces that never hold the GIL for long, so that the loop and every other
  server go on meanwhile; small ones are parsed and encoded on the loop, in one call each;
- a message may be at most ``max_message_bytes`` long: past that the session ends with a
  ``ConnectionError`` that names the limit (``maxMessageBytes``) and the buffer is dropped;
- no task stands between the pipes and the session: a send writes to stdin itself
  (`StdinStream`), and each line goes from the pipe's callback to the session's read stream
  (`actors.mcp.session_inbox.SessionInbox`).

Lines are parsed as the SDK parses them; a line that is not a JSON-RPC message reaches the
session as an ``Exception`` item, as with the SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup
from mcp.shared.message import SessionMessage

from actors.mcp.frames import BIG_FRAME_BYTES, encode_off_loop, is_big_message, parse_line, parse_off_loop
from actors.mcp.sdk_options import DEFAULT_MAX_MESSAGE_BYTES
from actors.mcp.session_inbox import SessionInbox
from actors.mcp.stdio_process import StdioProcess

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "StdinStream", "parse_line", "stdio_stream"]

logger = logging.getLogger(__name__)


@asynccontextmanager
async def stdio_stream(
    process: StdioProcess,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    on_failure: Callable[[ConnectionError], None] | None = None,
) -> AsyncIterator[tuple[SessionInbox, StdinStream]]:
    """Start ``process`` and yield ``(read_stream, write_stream)`` for ``mcp.Client``.

    A message longer than ``max_message_bytes`` ends the read stream: ``on_failure`` (called
    on the loop) gets the ``ConnectionError``, or without it the read stream yields it as its
    last item. On exit the server's stdin is closed and `StdioProcess.stop` ends the server
    within its graces, shielded from cancellation: no process is left behind.
    """
    if max_message_bytes <= 0:
        raise ValueError(f"max_message_bytes must be positive, got {max_message_bytes}")
    popen = await process.start()
    pipes = _Pipes(popen, process, max_message_bytes, on_failure)
    try:
        async with anyio.create_task_group() as tasks:
            pipes.parses = tasks  # before the pipes: a big first line is parsed by one of its tasks
            with anyio.CancelScope(shield=True):  # one loop iteration; a half-adopted pipe would leak
                await pipes.connect()
            try:
                yield pipes.read_stream, pipes.write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    await pipes.close()
                tasks.cancel_scope.cancel()
    finally:
        # Also when connecting the pipes failed or was cancelled: the server must not outlive us.
        with anyio.CancelScope(shield=True):
            await pipes.close()


class _Pipes:
    """The server's stdin and stdout as the session's two message streams."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        process: StdioProcess,
        max_message_bytes: int,
        on_failure: Callable[[ConnectionError], None] | None,
    ) -> None:
        self._popen = popen
        self._process = process
        self._max = max_message_bytes
        self._on_failure = on_failure
        self.read_stream = SessionInbox(self._resume)
        self.parses: TaskGroup | None = None
        """Where a big line is parsed (off the loop, by a task of the stream's group)."""
        self._stdout: _LineCutter | None = None
        self._stdout_pipe: asyncio.ReadTransport | None = None
        self._stdin: _PipeWriter | None = None
        self.write_stream = StdinStream(self._gone)
        self._closing = False

    async def connect(self) -> None:
        """Adopt the server's pipes on the loop (no thread per pipe)."""
        loop = asyncio.get_running_loop()
        stdout, stdin = self._popen.stdout, self._popen.stdin
        assert stdout is not None and stdin is not None
        self._stdout_pipe, self._stdout = await loop.connect_read_pipe(
            lambda: _LineCutter(self._max, self._line, self._ended), stdout
        )
        _, self._stdin = await loop.connect_write_pipe(_PipeWriter, stdin)
        self.write_stream.adopt(self._stdin)

    def _gone(self) -> None:
        # The server no longer reads: end the session's reading too, so no request waits on.
        self.read_stream.end()

    # ---- stdout, on the loop: each line from the pipe's callback straight to the inbox ------

    def _line(self, line: bytes | list[bytes]) -> bool:
        """One line of stdout (a big one in its parts) for the session; False once the session
        no longer reads (the rest of the output is then dropped)."""
        inbox = self.read_stream
        if not inbox.reading:
            return False
        if isinstance(line, bytes):
            inbox.put(parse_line(line))
        else:
            # Joined and parsed off the loop; its place in the inbox is kept meanwhile.
            parsed: asyncio.Future[SessionMessage | Exception] = asyncio.get_running_loop().create_future()
            inbox.put(parsed)
            assert self.parses is not None
            self.parses.start_soon(_parse_big, line, parsed)
        if inbox.full and self._stdout is not None:
            self._stdout.pause()
        return True

    def _resume(self) -> None:
        if self._stdout is not None:
            self._stdout.resume()

    def _ended(self, failure: ConnectionError | None) -> None:
        """Stdout ended (``failure``: why it was cut short, a line past the limit)."""
        if failure is not None:
            logger.debug("%s", failure)
            if self._on_failure is not None:
                self._on_failure(failure)
            else:
                self.read_stream.put(failure)
        self.read_stream.end()

    async def close(self) -> None:
        """Stop the traffic, close stdin, stop the server, close stdout. Idempotent; run shielded."""
        if self._closing:
            return
        self._closing = True
        # The reader drains from now on: a server stuck writing could not see stdin close.
        self.read_stream.close()
        self.write_stream.close()
        if self._stdin is not None:
            # What the session already wrote (a cancellation, say) is flushed as the pipe closes.
            self._stdin.close()
        else:
            self._close_unadopted(self._popen.stdin)
        await self._process.stop()
        if self._stdout_pipe is not None:
            self._stdout_pipe.close()
        else:
            self._close_unadopted(self._popen.stdout)
        self.read_stream.end()

    @staticmethod
    def _close_unadopted(pipe: object) -> None:
        close = getattr(pipe, "close", None)
        if callable(close):
            with contextlib.suppress(OSError):
                close()


async def _parse_big(parts: list[bytes], parsed: asyncio.Future[SessionMessage | Exception]) -> None:
    try:
        item = await parse_off_loop(parts)
    except Exception as exc:  # the worker failed: the session hears it as an item
        item = exc
    if not parsed.done():
        parsed.set_result(item)


class StdinStream:
    """The session's write stream (the SDK's ``WriteStream``): each message is written to the
    server's stdin within its own ``send``, with no task and no memory stream in between.

    A small message is encoded on the loop, a big one off it (`actors.mcp.frames`); its bytes
    go into the pipe's buffer in one step, so that a send cancelled while it waits for the pipe
    to drain never leaves half a message. Sends keep their order: one waits behind a big
    message being encoded. A pipe that is gone fails the send (``BrokenResourceError``) and
    calls ``gone``. Owned by the loop.
    """

    def __init__(self, gone: Callable[[], None]) -> None:
        self._gone = gone
        self._stdin: _PipeWriter | None = None
        self._order = asyncio.Lock()
        self._closed = False

    def adopt(self, stdin: _PipeWriter) -> None:
        self._stdin = stdin

    async def send(self, message: SessionMessage, /) -> None:
        if self._closed or self._stdin is None:
            raise anyio.ClosedResourceError
        async with self._order:
            try:
                # A big message off the loop, in pieces; a small one here, in one call.
                if is_big_message(message.message):
                    pieces = await encode_off_loop(message.message)
                else:
                    json = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    pieces = [(json + "\n").encode()]
            except ValueError:
                logger.exception("cannot encode a message to the server; dropped")
                return
            try:
                await self._stdin.write_all(pieces)
            except OSError as exc:
                self._gone()
                raise anyio.BrokenResourceError from exc

    def close(self) -> None:
        self._closed = True

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> StdinStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._closed = True


class _LineCutter(asyncio.Protocol):
    """The server's stdout on the loop, cut into lines as it arrives.

    Linear in the size of a message: each chunk is searched once for newlines and kept as it
    came; a line is joined once, when its newline arrives, and handed on (``on_line``). Reading
    pauses while the session has many lines to take, and a line longer than the limit is
    dropped, with everything after it (read and discarded, so that a server stuck writing can
    still see its stdin close). ``on_end`` hears once that no more lines come, and why.
    """

    def __init__(
        self,
        max_bytes: int,
        on_line: Callable[[bytes | list[bytes]], bool],
        on_end: Callable[[ConnectionError | None], None],
    ) -> None:
        self._max = max_bytes
        self._on_line = on_line
        self._on_end: Callable[[ConnectionError | None], None] | None = on_end
        self._parts: list[bytes] = []
        self._size = 0
        self._transport: asyncio.ReadTransport | None = None
        self._paused = False
        self._discarding = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        if self._discarding:
            return
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            if not self._add(data[start:end]):
                return
            line = self._line()
            self._parts, self._size = [], 0
            if not self._on_line(line):
                self.discard()
                return
            start = end + 1
        if start < len(data):
            self._add(data[start:] if start else data)

    def _line(self) -> bytes | list[bytes]:
        """The line just cut: its bytes, or for a big one its parts (joined off the loop)."""
        if len(self._parts) == 1:
            return self._parts[0]
        if self._size >= BIG_FRAME_BYTES:
            return self._parts
        return b"".join(self._parts)

    def _add(self, part: bytes) -> bool:
        """Add ``part`` to the line being cut; False (and discard from now on) past the limit."""
        self._size += len(part)
        if self._size > self._max:
            self.discard()
            self._end(
                ConnectionError(f"the server sent a message larger than maxMessageBytes ({self._max} bytes)")
            )
            return False
        self._parts.append(part)
        return True

    def discard(self) -> None:
        """Drop what is buffered and everything that arrives from now on."""
        self._discarding = True
        self._parts, self._size = [], 0
        self.resume()

    def eof_received(self) -> bool | None:
        return None  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        # A last line without its newline is not a message: the SDK drops it too.
        self._parts, self._size = [], 0
        self._end(None)

    def _end(self, failure: ConnectionError | None) -> None:
        on_end, self._on_end = self._on_end, None
        if on_end is not None:
            on_end(failure)

    def pause(self) -> None:
        if not self._paused and self._transport is not None and not self._discarding:
            self._paused = True
            self._transport.pause_reading()

    def resume(self) -> None:
        if self._paused and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()


class _PipeWriter(asyncio.Protocol):
    """The server's stdin on the loop, with flow control: `write` waits while the pipe is full."""

    def __init__(self) -> None:
        self._transport: asyncio.WriteTransport | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._lost: BaseException | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        self._transport = transport

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = exc if exc is not None else BrokenPipeError("the server's stdin is closed")
        self._writable.set()

    async def write_all(self, pieces: list[bytes]) -> None:
        """Write ``pieces``, all at once; then wait while the pipe is full. Raises ``OSError``
        once the pipe is gone."""
        if self._lost is not None or self._transport is None or self._transport.is_closing():
            raise BrokenPipeError("the server's stdin is closed") from self._lost
        for piece in pieces:
            self._transport.write(piece)
        await self._writable.wait()
        if self._lost is not None:
            raise BrokenPipeError("the server's stdin is closed") from self._lost

    def close(self) -> None:
        """Close the pipe: the server reads the end of its input (once it has read the rest)."""
        if self._transport is not None:
            self._transport.close()
