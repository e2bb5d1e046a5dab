"""`stdio_pipes`: the process's stdin and stdout as non-blocking pipes on the running loop, for the
SDK's ``stdio_server(stdin, stdout)``.

The SDK's own stdio files run every ``readline``, ``write`` and ``flush`` on a worker thread:
three thread round trips per request served, which on a busy machine cost more than the rest of
a gateway call. When stdin and stdout are pipes or sockets (how an MCP host starts a server), the
same lines are read and written with the loop's own readiness events instead. A terminal's input
is read on the loop too (`TerminalReader`): a read blocked in a worker thread would hold the
loop's shutdown, and Ctrl-C or SIGTERM would wait for the next line. Anything else (a file, and
output to a terminal) is left to the SDK.

While serving, fd 0 reads the null device and fd 1 writes to stderr, as the SDK's own claim does,
so a child or a stray ``print`` never reads or writes the wire; both are restored on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
from collections.abc import AsyncIterator

__all__ = ["PipeReader", "PipeWriter", "TerminalReader", "stdio_pipes"]

logger = logging.getLogger(__name__)

_LINE_LIMIT = 1 << 30
"""The longest line read (a JSON-RPC message): as unbounded as the SDK's own reader, in effect."""


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class PipeReader:
    """Lines of text from a pipe (what the SDK reads from an ``anyio.AsyncFile``)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def __aiter__(self) -> AsyncIterator[str]:
        while True:
            try:
                line = await self._reader.readline()
            except ValueError:  # a line past the limit: nothing after it can be framed
                logger.error("gateway: a line on stdin is longer than %d bytes; closing", _LINE_LIMIT)
                return
            if not line:
                return
            yield line.decode("utf-8", errors="replace")


class TerminalReader:
    """Lines typed on a terminal, read once the loop sees them ready (the terminal stays as it
    is: blocking, shared with the shell)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def __aiter__(self) -> AsyncIterator[str]:
        pending = b""
        while True:
            chunk = await self._read()
            if not chunk:  # Ctrl-D, or the terminal hung up
                if pending:
                    yield pending.decode("utf-8", errors="replace")
                return
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                yield (line + b"\n").decode("utf-8", errors="replace")

    async def _read(self) -> bytes:
        loop = asyncio.get_running_loop()
        while True:
            ready = loop.create_future()
            loop.add_reader(self._fd, _wake, ready)
            try:
                await ready
            finally:
                loop.remove_reader(self._fd)
            try:
                return os.read(self._fd, 65536)
            except (BlockingIOError, InterruptedError):
                continue  # someone else read it first
            except OSError:  # EIO: the terminal is gone
                return b""


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


class PipeWriter:
    """Text to a pipe (what the SDK writes to an ``anyio.AsyncFile``): ``write`` queues it, ``flush``
    waits while the pipe is full."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


@contextlib.asynccontextmanager
async def stdio_pipes() -> AsyncIterator[tuple[PipeReader | TerminalReader, PipeWriter | None] | None]:
    """stdin and stdout as a `PipeReader` and a `PipeWriter`; stdin as a `TerminalReader` (and
    None: the SDK's stdout) on a terminal; else None (then the SDK's files serve)."""
    if not (_is_pipe(0) and _is_pipe(1)):
        yield (TerminalReader(0), None) if os.isatty(0) else None
        return
    loop = asyncio.get_running_loop()
    blocking = os.get_blocking(0), os.get_blocking(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    # Private duplicates carry the wire (the transports own and close them); fd 0 and 1 point
    # elsewhere meanwhile.
    reading = open(os.dup(0), "rb", buffering=0)  # noqa: SIM115 - its transport closes it
    writing = open(os.dup(1), "wb", buffering=0)  # noqa: SIM115 - its transport closes it
    read_transport: asyncio.BaseTransport | None = None
    write_transport: asyncio.WriteTransport | None = None
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
            os.dup2(2, 1)
        finally:
            os.close(null)
        reader = asyncio.StreamReader(limit=_LINE_LIMIT, loop=loop)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), reading
        )
        write_transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), writing
        )
        writer = asyncio.StreamWriter(write_transport, protocol, reader, loop)
        yield PipeReader(reader), PipeWriter(writer)
    finally:
        if write_transport is not None:
            write_transport.close()
        else:
            writing.close()
        if read_transport is not None:
            read_transport.close()
        else:
            reading.close()
        # The pipes' descriptions were made non-blocking for the loop; whoever reads fd 0 or
        # writes fd 1 after us expects them as they were.
        for saved, fd, was_blocking in ((saved_in, 0, blocking[0]), (saved_out, 1, blocking[1])):
            with contextlib.suppress(OSError):
                os.set_blocking(saved, was_blocking)
            os.dup2(saved, fd)
            os.close(saved)
