"""One stdio server process that the SDK started: its pid, its stderr, its exit, its deadline.

The SDK's ``stdio_client`` hands out no handle to the process it starts. `StdioProcess` finds
it (in the client's suspended generator, see `sdk_process`), keeps the last lines of its
stderr, learns of its exit at once (a pidfd on Linux, even while a grandchild holds its pipes
open), and, once the transport tears down, makes sure it is gone within the graces: SIGTERM to
its process group after ``close_grace``, SIGKILL after ``kill_grace`` more. The SDK alone would
wait 2 s before SIGTERM.

On POSIX the command runs through `actors.mcp.pdeathsig`, so the server dies with its host.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import shutil
import signal
import sys
from collections import deque
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from pathlib import Path
from typing import Any, Final, TextIO

import anyio
import anyio.abc
from mcp.client.stdio import StdioServerParameters

from actors.mcp.redaction import Redactor
from actors.mcp.sdk_options import StdioCommand
from actors.mcp.transport import StartRefused

__all__ = [
    "PDEATHSIG_SCRIPT",
    "SDK_VERIFIED",
    "StderrTail",
    "StdioProcess",
    "exit_text",
    "resolve_command",
    "sdk_process",
    "server_parameters",
    "signal_group",
    "wait_exit",
]

logger = logging.getLogger(__name__)

PDEATHSIG_SCRIPT: Final = Path(__file__).with_name("pdeathsig.py")
"""The wrapper that sets the parent-death signal and then execs the server."""

SDK_VERIFIED: Final = ((2, 3), (2, 4))
"""The ``mcp`` versions (from, up to but excluding) whose ``stdio_client`` was checked to keep
the process it starts in a local variable named ``process`` (which `sdk_process` reads)."""

_STDERR_TAIL_LINES = 20
_STDERR_LINE_MAX = 500
_EXIT_POLL_INTERVAL = 0.01


def resolve_command(spec: StdioCommand, label: str) -> str:
    """The command's path, or `StartRefused` now (rather than the wrapper's exit 127 later).

    Walks the file system: call it off the event loop.
    """
    command = spec.command
    if os.sep in command or (os.altsep and os.altsep in command):
        candidate = command if os.path.isabs(command) or spec.cwd is None else os.path.join(spec.cwd, command)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return command
        raise StartRefused(f"{label}: command not found or not executable: {command!r}")
    search_path = (spec.env or {}).get("PATH", os.environ.get("PATH", os.defpath))
    found = shutil.which(command, path=search_path)
    if found is None:
        raise StartRefused(f"{label}: command not found: {command!r}")
    return found


def server_parameters(spec: StdioCommand, resolved: str) -> StdioServerParameters:
    """The SDK's parameters to start ``resolved`` (`resolve_command`'s answer) as ``spec`` says."""
    command, args = resolved, list(spec.args)
    if os.name == "posix" and sys.executable:
        # -I -S: the wrapper needs only the standard library; start it fast.
        args = ["-I", "-S", str(PDEATHSIG_SCRIPT), f"--ppid={os.getpid()}", command, *args]
        command = sys.executable
    return StdioServerParameters(
        command=command, args=args, env=dict(spec.env) if spec.env is not None else None, cwd=spec.cwd
    )


def sdk_process(inner: AbstractAsyncContextManager[Any]) -> anyio.abc.Process | None:
    """The process that the SDK's ``stdio_client`` started, read from its suspended generator.

    The SDK does not expose it; we need it for the pid, the exit status and the kill deadline.
    Verified on the ``mcp`` versions of `SDK_VERIFIED` (a test fails when the SDK moves out of
    that range). None, logged, when the generator holds no such local.
    """
    frame = getattr(getattr(inner, "gen", None), "ag_frame", None)
    process = frame.f_locals.get("process") if frame is not None else None
    if isinstance(process, anyio.abc.Process):
        return process
    if frame is not None:
        # A failed spawn has no frame left; a live one without the local means the SDK changed.
        logger.warning(
            "could not find the stdio server's process in the SDK's stdio_client: no pid, exit "
            "status or kill deadline for it (see actors.mcp.stdio_process.SDK_VERIFIED)"
        )
    return None


async def wait_exit(process: anyio.abc.Process, timeout: float) -> bool:
    """Whether the process has exited (and been reaped) within ``timeout``.

    Polls ``returncode``: ``wait()`` would also wait for pipe EOF, which a grandchild can hold.
    """
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(_EXIT_POLL_INTERVAL)
    return process.returncode is not None


def signal_group(process: anyio.abc.Process, sig: signal.Signals) -> None:
    """Signal the server's process group (the SDK starts it as a session leader)."""
    if process.returncode is not None:
        return
    try:
        if os.name == "posix":
            os.killpg(process.pid, sig)
        elif sig == signal.SIGKILL:
            process.kill()
        else:
            process.terminate()
    except (ProcessLookupError, PermissionError):
        pass


def exit_text(returncode: int | None) -> str:
    """``exit status 3``, ``killed by SIGTERM``, or empty while the process runs."""
    if returncode is None:
        return ""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


class StdioProcess:
    """One spawn of a stdio server: its process once found, its stderr tail, its exit watch
    and its kill deadline. Used on the event-loop thread only."""

    def __init__(
        self,
        label: str,
        redact: Redactor,
        *,
        close_grace: float,
        kill_grace: float,
        on_exit: Callable[[], None],
    ) -> None:
        """``on_exit`` is called (on the loop) as soon as the process is seen to exit."""
        self._label = label
        self._redact = redact
        self._close_grace = close_grace
        self._kill_grace = kill_grace
        self._on_exit = on_exit
        self.process: anyio.abc.Process | None = None
        """The server's process, once `adopt` found it."""
        self.stderr: StderrTail | None = None
        self._errlog: TextIO | None = None
        self._pidfd: int | None = None
        self._watchdog_scope: anyio.CancelScope | None = None

    @property
    def pid(self) -> int | None:
        """The server's pid while it runs, else None."""
        process = self.process
        if process is None or process.returncode is not None:
            return None
        return process.pid

    async def open_stderr(self, stack: AsyncExitStack) -> TextIO:
        """A pipe for the server's stderr, read on the loop into `stderr`; ``stack`` closes it."""
        read_fd, write_fd = os.pipe()
        tail = StderrTail(self._label, self._redact)
        try:
            pipe = os.fdopen(read_fd, "rb", buffering=0)
        except BaseException:
            os.close(read_fd)
            os.close(write_fd)
            raise
        try:
            reader, _ = await asyncio.get_running_loop().connect_read_pipe(lambda: tail, pipe)
        except BaseException:
            pipe.close()
            os.close(write_fd)
            raise
        stack.callback(reader.close)
        errlog = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        stack.callback(errlog.close)
        self.stderr = tail
        self._errlog = errlog
        return errlog

    def adopt(self, inner: AbstractAsyncContextManager[Any]) -> int | None:
        """The SDK started (or failed to start) the process: keep its handle, watch for its
        exit, drop our end of the stderr pipe. Returns its pid when found."""
        if self._errlog is not None:
            # The child holds its own copy; ours would keep the pipe open after it exits.
            self._errlog.close()
        process = sdk_process(inner)
        if process is None:
            return None
        self.process = process
        self._watch(process)
        return process.pid

    def _watch(self, process: anyio.abc.Process) -> None:
        """Learn of the server's exit at once, even while a grandchild holds its pipes open."""
        pidfd_open = getattr(os, "pidfd_open", None)
        if pidfd_open is None:
            return
        try:
            fd: int = pidfd_open(process.pid)
        except OSError:
            return  # already gone: the end of its stdout says so
        self._pidfd = fd
        asyncio.get_running_loop().add_reader(fd, self._exited)

    def _exited(self) -> None:
        self.unwatch()
        self._on_exit()

    def unwatch(self) -> None:
        """Stop watching for the exit (idempotent)."""
        fd, self._pidfd = self._pidfd, None
        if fd is None:
            return
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(fd)
        with contextlib.suppress(OSError):
            os.close(fd)

    def start_watchdog(self, tasks: anyio.abc.TaskGroup) -> None:
        """The transport is tearing down: make sure the server is gone within the graces."""
        process = self.process
        if process is None or self._watchdog_scope is not None or process.returncode is not None:
            return
        self._watchdog_scope = anyio.CancelScope(shield=True)
        tasks.start_soon(self._watchdog, process, self._watchdog_scope)

    def stop_watchdog(self) -> None:
        """The SDK reaped the process (or gave up on it): the deadline is moot."""
        scope, self._watchdog_scope = self._watchdog_scope, None
        if scope is not None:
            scope.cancel()

    async def _watchdog(self, process: anyio.abc.Process, scope: anyio.CancelScope) -> None:
        # Shielded: it must outlive a cancelled connect, whose teardown is what it guards.
        with scope:
            for sig, grace in ((signal.SIGTERM, self._close_grace), (signal.SIGKILL, self._kill_grace)):
                if await wait_exit(process, grace):
                    return
                logger.debug("%s: pid %d still running; sending %s", self._label, process.pid, sig.name)
                signal_group(process, sig)

    def kill_leftovers(self) -> None:
        """The server is gone: kill what it left in its process group (children holding its pipes)."""
        process = self.process
        if process is not None and process.returncode is not None and os.name == "posix":
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
                logger.debug("%s: killed what was left of process group %d", self._label, process.pid)

    async def exit_status(self, wait: float) -> str:
        """The exit status (`exit_text`) once the process exits, waiting up to ``wait``."""
        process = self.process
        if process is None:
            return ""
        await wait_exit(process, wait)
        return exit_text(process.returncode)

    async def stderr_closed(self, wait: float) -> None:
        """Wait up to ``wait`` for the end of stderr, so that the tail holds the last words."""
        if self.stderr is not None:
            with anyio.move_on_after(wait):
                await self.stderr.closed.wait()

    def stderr_lines(self, count: int) -> list[str]:
        """The last ``count`` lines of stderr."""
        return self.stderr.tail(count) if self.stderr is not None else []


class StderrTail(asyncio.Protocol):
    """Reads a server's stderr on the loop: logs each line at DEBUG, keeps the last few."""

    def __init__(self, label: str, redact: Redactor) -> None:
        self._label = label
        self._redact = redact
        self._lines: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""
        self.closed = anyio.Event()

    def tail(self, count: int) -> list[str]:
        """The last ``count`` lines."""
        return list(self._lines)[-count:]

    def data_received(self, data: bytes) -> None:
        text = self._partial + self._decoder.decode(data)
        *lines, self._partial = text.split("\n")
        if len(self._partial) > _STDERR_LINE_MAX:
            lines.append(self._partial)
            self._partial = ""
        for line in lines:
            self._add(line)

    def connection_lost(self, exc: Exception | None) -> None:
        self._add(self._partial + self._decoder.decode(b"", final=True))
        self._partial = ""
        self.closed.set()

    def _add(self, line: str) -> None:
        line = self._redact(line.rstrip("\r"))
        if line.strip():
            logger.debug("%s stderr: %s", self._label, line)
            self._lines.append(line[:_STDERR_LINE_MAX])
