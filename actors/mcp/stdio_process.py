"""One stdio server process: its start off the event loop, its stderr, its exit, its stop.

`StdioProcess` starts the server on a *keeper thread* of its own, which then waits for the
server's exit and reaps it. Both halves keep work off the shared loop: the fork and exec (171 ms
seen there under load) and the wait (asyncio's child watcher on Python 3.11 runs a thread per
child anyway). The keeper must live as long as the server: the parent-death signal the launch
sets fires when the *thread* that forked the server ends, so a pooled worker thread (anyio
retires idle ones) would take the server with it.

The signal is set by util-linux's ``setpriv --pdeathsig`` where it is found (two small native
execs), else by our own wrapper, `actors.mcp.pdeathsig` (a Python start: the cold start pays
for it). A sandboxed server always goes through our wrapper, which also joins its cgroup.

The exit is pushed to the loop at once, even while a grandchild holds the server's pipes open.
`StdioProcess.stop` ends the server within the graces once its stdin is closed: SIGTERM to its
process group after ``close_grace``, SIGKILL after ``kill_grace`` more.
"""

from __future__ import annotations

import asyncio
import codecs
import concurrent.futures
import contextlib
import functools
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Final

import anyio
from mcp.client.stdio import get_default_environment

from actors.mcp.loop import offload
from actors.mcp.redaction import Redactor
from actors.mcp.sdk_options import StdioCommand
from actors.mcp.served import loop_of, marker
from actors.mcp.transport import StartRefused

__all__ = [
    "PDEATHSIG_SCRIPT",
    "StderrTail",
    "StdioProcess",
    "command_line",
    "exit_text",
    "parent_death_launcher",
    "resolve_command",
    "sandboxed_command_line",
]

logger = logging.getLogger(__name__)

PDEATHSIG_SCRIPT: Final = Path(__file__).with_name("pdeathsig.py")
"""The wrapper that sets the parent-death signal and then execs the server."""

_STDERR_TAIL_LINES = 20
_STDERR_LINE_MAX = 500
_SPAWN_TIMEOUT = 30.0
_REAP_WAIT = 2.0


_SHELL = "/bin/sh"
# Run by the shell that setpriv execs, once the death signal is set: $0 is the pid our server
# must have as its parent. Had the parent died between the fork and the prctl, no signal would
# ever come: exit instead, as our own wrapper does.
_PARENT_CHECK = '[ "$PPID" = "$0" ] || exit 1; exec "$@"'


@functools.cache
def parent_death_launcher() -> tuple[str, ...]:
    """The argv prefix that sets the parent-death signal natively (``setpriv --pdeathsig``
    through a shell that checks the parent), or ``()`` where setpriv cannot (then the Python
    wrapper does). Runs setpriv once to see it can: call it off the event loop."""
    setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    if setpriv is None or not os.access(_SHELL, os.X_OK):
        return ()
    prefix = (setpriv, "--pdeathsig", "KILL", "--", _SHELL, "-c", _PARENT_CHECK)
    try:
        tried = subprocess.run(
            [*prefix, str(os.getpid()), _SHELL, "-c", "exit 0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=_SPAWN_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    # An older setpriv without --pdeathsig exits 1 with its usage.
    return prefix if tried.returncode == 0 else ()


def resolve_command(spec: StdioCommand, label: str) -> str:
    """The command's path, or `StartRefused` now (rather than the launch's exit 127 later).

    Walks the file system (and looks up the `parent_death_launcher` once): call it off the
    event loop. An entry that would serve a file already served up the chain is refused too
    (`actors.mcp.served`).
    """
    parent_death_launcher()
    if (loop := loop_of(spec.command, spec.args, spec.env, spec.cwd)) is not None:
        raise StartRefused(f"{label}: {loop}")
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


def command_line(spec: StdioCommand, resolved: str) -> list[str]:
    """The argv that starts ``resolved`` (`resolve_command`'s answer) with ``spec``'s arguments,
    through the `parent_death_launcher` or else the parent-death wrapper on POSIX."""
    argv = [resolved, *spec.args]
    if launcher := parent_death_launcher():
        return [*launcher, str(os.getpid()), *argv]
    if os.name == "posix" and sys.executable:
        # -I -S: the wrapper needs only the standard library; start it fast.
        return [sys.executable, "-I", "-S", str(PDEATHSIG_SCRIPT), f"--ppid={os.getpid()}", *argv]
    return argv


def sandboxed_command_line(bwrap_argv: Sequence[str], wrapper_options: Sequence[str]) -> list[str]:
    """The argv that starts a sandboxed server: bubblewrap through the parent-death wrapper,
    which first joins the sandbox's cgroup and sets its rlimits."""
    wrapper = [sys.executable, "-I", "-S", str(PDEATHSIG_SCRIPT), f"--ppid={os.getpid()}"]
    return [*wrapper, *wrapper_options, *bwrap_argv]


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
    """One spawn of a stdio server: its process once started, its stderr tail, its exit and
    its stop. Used on the event-loop thread only (its keeper thread reports through the loop)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        label: str = "stdio server",
        redact: Redactor | None = None,
        close_grace: float = 0.5,
        kill_grace: float = 1.0,
        on_exit: Callable[[], None] | None = None,
    ) -> None:
        """``env`` is set over the SDK's default environment, as the SDK's ``stdio_client``
        does; ``on_exit`` is called on the loop as soon as the process is seen to exit."""
        if not argv:
            raise ValueError("a stdio server needs a command")
        self.argv = list(argv)
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._label = label
        self._redact = redact if redact is not None else Redactor()
        self._close_grace = close_grace
        self._kill_grace = kill_grace
        self._on_exit = on_exit
        self.process: subprocess.Popen[bytes] | None = None
        """The server's process, once `start` started it."""
        self.stderr: StderrTail | None = None
        self._stderr_fd: int | None = None
        self._exited: anyio.Event | None = None

    @property
    def pid(self) -> int | None:
        """The server's pid while it runs, else None."""
        process = self.process
        if process is None or process.returncode is not None:
            return None
        return process.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has exited and been reaped, else None."""
        return self.process.returncode if self.process is not None else None

    async def open_stderr(self, stack: AsyncExitStack) -> None:
        """A pipe for the server's stderr, read on the loop into `stderr`; ``stack`` closes it.

        Without it the server writes to this process's stderr.
        """
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
        self.stderr = tail
        self._stderr_fd = write_fd
        stack.callback(self._close_stderr_fd)

    async def start(self) -> subprocess.Popen[bytes]:
        """Start the server on its keeper thread, with pipes for stdin and stdout.

        Raises ``OSError`` when it cannot be started. Waits (shielded, at most 30 s) for the
        start: a caller cancelled meanwhile still gets the process, so that it can stop it.
        """
        if self._exited is not None:
            raise RuntimeError("StdioProcess is single use: start() was already called")
        self._exited = anyio.Event()
        started: concurrent.futures.Future[subprocess.Popen[bytes]] = concurrent.futures.Future()
        # The keeper owns our end of the stderr pipe from here on, and closes it once the child
        # holds its own copy (ours would keep the pipe open after the child exits).
        stderr_fd, self._stderr_fd = self._stderr_fd, None
        keeper = threading.Thread(
            target=self._keep,
            args=(started, stderr_fd, asyncio.get_running_loop()),
            name=f"mcp-stdio {self._label}",
            daemon=True,
        )
        try:
            # Thread.start waits until the new thread runs: on a machine short of CPU that is a
            # scheduling delay the loop (every server) must not sit through. Shielded: a
            # cancelled caller still gets the process, to stop it.
            with anyio.CancelScope(shield=True):
                await offload(keeper.start)
        except RuntimeError as exc:  # no more threads
            if stderr_fd is not None:
                os.close(stderr_fd)
            raise OSError(f"{self._label}: cannot start a thread for the server: {exc}") from exc
        with anyio.CancelScope(shield=True), anyio.move_on_after(_SPAWN_TIMEOUT):
            await asyncio.wrap_future(started)
        # Still pending only after the timeout: cancelled, the keeper stops what it starts late.
        if started.cancel():
            raise OSError(f"{self._label}: the server did not start within {_SPAWN_TIMEOUT}s")
        process = started.result()
        self.process = process
        return process

    def _keep(
        self,
        started: concurrent.futures.Future[subprocess.Popen[bytes]],
        stderr_fd: int | None,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        """The keeper thread: start the server, then wait for its exit and report it."""
        try:
            process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr_fd,
                # The chain's marker last: an entry's own env cannot hide a loop.
                env=get_default_environment() | (self._env or {}) | marker(),
                cwd=self._cwd,
                start_new_session=True,
                bufsize=0,
            )
        except BaseException as exc:
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                started.set_exception(exc)
            return
        finally:
            if stderr_fd is not None:
                os.close(stderr_fd)
        try:
            started.set_result(process)
        except concurrent.futures.InvalidStateError:
            # The start was given up on: nobody will ever stop this server but us.
            _signal_group(process, signal.SIGKILL)
            process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()
            return
        # Blocks until the server exits, which `stop` (or the parent-death signal) guarantees.
        process.wait()
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is left to tell
            loop.call_soon_threadsafe(self._reaped)

    def _reaped(self) -> None:
        if self._exited is not None:
            self._exited.set()
        on_exit = self._on_exit
        if on_exit is not None:
            on_exit()

    def unwatch(self) -> None:
        """Stop reporting the exit to ``on_exit`` (idempotent)."""
        self._on_exit = None

    async def wait_exit(self, timeout: float) -> bool:
        """Whether the process has exited (and been reaped) within ``timeout``."""
        if self.process is None or self._exited is None:
            return True
        if self.process.returncode is None:
            with anyio.move_on_after(timeout):
                await self._exited.wait()
        return self.process.returncode is not None

    async def stop(self) -> None:
        """Make sure the server is gone, its stdin being closed: SIGTERM to its process group
        after ``close_grace``, SIGKILL after ``kill_grace`` more, then what it left in its
        group. Bounded; idempotent. Shield it from cancellation."""
        process = self.process
        if process is None:
            return
        for sig, grace in ((signal.SIGTERM, self._close_grace), (signal.SIGKILL, self._kill_grace)):
            if await self.wait_exit(grace):
                break
            logger.debug("%s: pid %d still running; sending %s", self._label, process.pid, sig.name)
            _signal_group(process, sig)
        else:
            if not await self.wait_exit(_REAP_WAIT):
                logger.warning("%s: pid %d survived SIGKILL; abandoning it", self._label, process.pid)
                return
        self._kill_leftovers(process)

    def _kill_leftovers(self, process: subprocess.Popen[bytes]) -> None:
        """The server is gone: kill what it left in its process group (children holding its pipes)."""
        if os.name == "posix":
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
                logger.debug("%s: killed what was left of process group %d", self._label, process.pid)

    async def exit_status(self, wait: float) -> str:
        """The exit status (`exit_text`) once the process exits, waiting up to ``wait``."""
        if self.process is None:
            return ""
        await self.wait_exit(wait)
        return exit_text(self.process.returncode)

    async def stderr_closed(self, wait: float) -> None:
        """Wait up to ``wait`` for the end of stderr, so that the tail holds the last words."""
        if self.stderr is not None:
            with anyio.move_on_after(wait):
                await self.stderr.closed.wait()

    def stderr_lines(self, count: int) -> list[str]:
        """The last ``count`` lines of stderr."""
        return self.stderr.tail(count) if self.stderr is not None else []

    def _close_stderr_fd(self) -> None:
        fd, self._stderr_fd = self._stderr_fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Signal the server's process group (it was started as a session leader)."""
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
