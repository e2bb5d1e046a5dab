"""`stdio_stream`: the message streams of a stdio server, for ``mcp.Client``, in place of the
SDK's ``stdio_client``.

Newline-delimited JSON-RPC on the server's stdin and stdout, as the SDK speaks it, with three
differences that matter on a loop shared by every server:

- the server is started off the loop (`actors.mcp.stdio_process`); the SDK forks on it;
- reading is linear in the size of a message: each chunk is appended to one buffer and only
  the new bytes are searched for the end of the line (the SDK re-splits the whole buffer for
  every chunk, which made one 20 MB message take seconds);
- a message may be at most ``max_message_bytes`` long: past that the session ends with a
  ``ConnectionError`` that names the limit (``maxMessageBytes``) and the buffer is dropped.

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
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from actors.mcp.sdk_options import DEFAULT_MAX_MESSAGE_BYTES
from actors.mcp.stdio_process import StdioProcess

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "parse_line", "stdio_stream"]

logger = logging.getLogger(__name__)

_READ_SIZE = 256 * 1024
_FLUSH_WAIT = 0.5


def parse_line(line: bytes | bytearray) -> SessionMessage | Exception:
    """One line of the server's stdout (without its newline) as the SDK parses it: a message,
    or the error that says why it is none."""
    try:
        message = types.jsonrpc_message_adapter.validate_json(line.decode(), by_name=False)
    except ValueError as exc:  # UnicodeDecodeError and pydantic's ValidationError among them
        return exc
    return SessionMessage(message)


@asynccontextmanager
async def stdio_stream(
    process: StdioProcess,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    on_failure: Callable[[ConnectionError], None] | None = None,
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
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
        with anyio.CancelScope(shield=True):  # one loop iteration; a half-adopted pipe would leak
            await pipes.connect()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pipes.read)
            tasks.start_soon(pipes.write)
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
        self._to_session, self.read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        self.write_stream, self._from_session = anyio.create_memory_object_stream[SessionMessage](0)
        self._stdout: asyncio.StreamReader | None = None
        self._stdout_pipe: asyncio.ReadTransport | None = None
        self._stdin: _PipeWriter | None = None
        self._writer_done = anyio.Event()
        self._closing = False
        self._closed = anyio.Event()

    async def connect(self) -> None:
        """Adopt the server's pipes on the loop (no thread per pipe)."""
        loop = asyncio.get_running_loop()
        stdout, stdin = self._popen.stdout, self._popen.stdin
        assert stdout is not None and stdin is not None
        reader = asyncio.StreamReader(limit=_READ_SIZE)
        self._stdout_pipe, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), stdout
        )
        self._stdout = reader
        _, self._stdin = await loop.connect_write_pipe(_PipeWriter, stdin)

    async def read(self) -> None:
        """Deliver each line of stdout to the session; after a failure, drain and drop the rest."""
        assert self._stdout is not None
        buffer = bytearray()
        scanned = 0  # how many bytes at the start of the buffer are known to hold no newline
        delivering = True
        try:
            while chunk := await self._stdout.read(_READ_SIZE):
                if not delivering:
                    continue  # drained: a server stuck writing could not see its stdin close
                buffer += chunk
                while True:
                    end = buffer.find(b"\n", scanned)
                    if (end if end >= 0 else len(buffer)) > self._max:
                        delivering = False
                        await self._fail(
                            ConnectionError(
                                f"the server sent a message larger than maxMessageBytes ({self._max} bytes)"
                            )
                        )
                        break
                    if end < 0:
                        scanned = len(buffer)
                        break
                    # Copy the shorter side: a big message usually ends its buffer (no copy).
                    if len(buffer) - end - 1 < end:
                        rest = buffer[end + 1 :]
                        del buffer[end:]
                        line, buffer = buffer, rest
                    else:
                        line = buffer[:end]
                        del buffer[: end + 1]  # cheap: CPython moves the start of a bytearray
                    scanned = 0
                    if not await self._deliver(parse_line(line)):
                        delivering = False
                        break
                if not delivering:
                    buffer = bytearray()
        except (OSError, anyio.ClosedResourceError):
            pass  # the pipe broke or was closed under the read: the end of the stream
        finally:
            self._to_session.close()

    async def _deliver(self, item: SessionMessage | Exception) -> bool:
        """Hand one item to the session; False once the session no longer reads."""
        try:
            await self._to_session.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    async def _fail(self, error: ConnectionError) -> None:
        logger.debug("%s", error)
        if self._on_failure is not None:
            self._on_failure(error)
        else:
            await self._deliver(error)
        self._to_session.close()

    async def write(self) -> None:
        """Send each message of the session to stdin, one JSON line each."""
        assert self._stdin is not None
        try:
            async with self._from_session:
                async for message in self._from_session:
                    try:
                        json = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        data = (json + "\n").encode()
                    except ValueError:
                        logger.exception("cannot encode a message to the server; dropped")
                        continue
                    await self._stdin.write(data)
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            # The server no longer reads: end the session's reading too, so no request waits on.
            self._to_session.close()
        finally:
            self._writer_done.set()

    async def close(self) -> None:
        """Stop the traffic, close stdin, stop the server, close stdout. Idempotent; run shielded."""
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        try:
            # The reader drains from now on: a server stuck writing could not see stdin close.
            self.read_stream.close()
            self.write_stream.close()
            if self._stdin is not None:
                # What the session already handed over (a cancellation, say) is worth a moment.
                with anyio.move_on_after(_FLUSH_WAIT):
                    await self._writer_done.wait()
                self._stdin.close()
            else:
                self._close_unadopted(self._popen.stdin)
            await self._process.stop()
            if self._stdout_pipe is not None:
                self._stdout_pipe.close()
            else:
                self._close_unadopted(self._popen.stdout)
            self._to_session.close()
            self._from_session.close()
        finally:
            self._closed.set()

    @staticmethod
    def _close_unadopted(pipe: object) -> None:
        close = getattr(pipe, "close", None)
        if callable(close):
            with contextlib.suppress(OSError):
                close()


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

    async def write(self, data: bytes) -> None:
        """Write ``data``; wait while the pipe is full. Raises ``OSError`` once the pipe is gone."""
        if self._lost is not None or self._transport is None or self._transport.is_closing():
            raise BrokenPipeError("the server's stdin is closed") from self._lost
        self._transport.write(data)
        await self._writable.wait()
        if self._lost is not None:
            raise BrokenPipeError("the server's stdin is closed") from self._lost

    def close(self) -> None:
        """Close the pipe: the server reads the end of its input (once it has read the rest)."""
        if self._transport is not None:
            self._transport.close()
