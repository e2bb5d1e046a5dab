"""Fork servers: start a test's Python program (an MCP server of ``tests/servers``, the
conformance client) by a fork instead of an interpreter start and an import.

A Python MCP server's start costs about 0.9 CPU-s, most of it importing the SDK; the suite starts
several hundred. A `ForkServer` is a process that imports its target (a module run as with
``python -m``, or a script) once, then forks a process per start. What a test runs instead of
``python -m tests.servers.X ARGS`` is `command`'s ``python -I -S launch.py SOCKET ARGS``
(`tests/harness/launch.py`, the standard library only: a few ms), which hands its arguments,
environment, working directory and standard streams to the fork server; the forked child runs
the target as ``__main__`` with them and the launcher exits with the child's status (killed by
the same signal, if it was). The launcher is what the runtime starts, signals and reaps; the
server is a real process of its own speaking over the launcher's real pipes.

The fork server kills a child whose launcher has gone (SIGKILL, parent-death signal), and is
the parent of every child it forked: one process group, killed with it. What differs from a
fresh interpreter: the pid is not the launcher's, the parent and process group are the fork
server's, and what the interpreter and the target read at start or import time (``PYTHON*``,
module-level code) comes from the fork server's environment, not the launcher's. Tests that
depend on those start the real process (``real_process=True`` where the helpers take it).

`command` keeps one fork server per target in each test process (each pytest-xdist worker),
started on first use and stopped at the end of the session (tests/conftest.py) or of the
process. Running this module starts a fork server: ``python -m tests.harness.forkserver SOCKET
TARGET PARENT_PID`` (cwd: the repository).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import importlib.util
import json
import logging
import os
import runpy
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENABLED", "LAUNCH", "MARKER", "ForkServer", "command", "pids", "python_module", "stop_all"]

ROOT = Path(__file__).resolve().parents[2]
LAUNCH = Path(__file__).resolve().with_name("launch.py")
READY_TIMEOUT = 60.0
"""Seconds a fork server may take to import its target (a busy machine, a cold disk)."""
STOP_TIMEOUT = 30.0
HEADER_TIMEOUT = 10.0
"""Seconds a launcher may take to send its header once connected (it sends it at once)."""
PARENT_POLL = 1.0
"""How often a fork server checks that the test process that started it is still there."""

_LENGTH = struct.Struct("!Q")
_STATUS = struct.Struct("!i")


class ForkServer:
    """One fork server for ``target``: a module name (run as ``python -m`` runs it) or the path of
    a ``.py`` script. ``env``: the fork server's environment, which is what the target sees at
    import time (default: this process's)."""

    def __init__(self, target: str, env: Mapping[str, str] | None = None) -> None:
        self.target = target
        self._env = dict(env) if env is not None else None
        self._folder = tempfile.TemporaryDirectory(prefix="mcp-actors-forkserver-")
        self.socket_path = str(Path(self._folder.name) / "fork.sock")
        self.process: subprocess.Popen[bytes] | None = None

    def command(self, *args: str) -> list[str]:
        """The argv that runs the target with ``args`` in a process forked from this server."""
        return [sys.executable, "-I", "-S", str(LAUNCH), self.socket_path, *args]

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> ForkServer:
        """Start the fork server; return once it has imported its target and listens."""
        argv = [sys.executable, "-m", "tests.harness.forkserver", self.socket_path, self.target]
        self.process = subprocess.Popen(
            [*argv, str(os.getpid())],
            cwd=ROOT,
            env=self._env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            start_new_session=True,  # its children are in its group: one kill ends them all
        )
        assert self.process.stdout is not None
        # One line, "ready", once it listens; nothing (EOF) if it died importing the target.
        ready = _read_line(self.process.stdout.fileno(), READY_TIMEOUT)
        if ready != b"ready\n":
            self.stop()
            raise AssertionError(f"the fork server of {self.target} did not start: {ready!r}")
        return self

    def stop(self) -> None:
        """Kill the fork server and every process it forked; bounded, idempotent."""
        process, self.process = self.process, None
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(STOP_TIMEOUT)
            if process.stdout is not None:
                process.stdout.close()
        self._folder.cleanup()

    def __enter__(self) -> ForkServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _read_line(fd: int, timeout: float) -> bytes:
    """Bytes read from ``fd`` up to a newline, EOF or ``timeout``."""
    deadline = time.monotonic() + timeout
    data = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                break
            chunk = os.read(fd, 64)
            if not chunk:
                break
            data += chunk
    return data


# --- One fork server per target in this process -------------------------------------------------

ENABLED = os.environ.get("MCP_ACTORS_TEST_FORK", "1") != "0"
"""``MCP_ACTORS_TEST_FORK=0``: every `python_module` runs as a real ``python -m``, as before."""
MARKER = "real_process"
"""``@pytest.mark.real_process``: the test's `python_module` calls all run real processes."""
real_processes = False
"""Whether the running test is marked `MARKER` (set by tests/conftest.py before its fixtures)."""


def python_module(module: str, *args: str, real_process: bool = False) -> list[str]:
    """The argv that runs ``python -m module args``: through `command` (a fork of a process that
    imported ``module`` already), or the real interpreter when ``real_process`` is true (or the
    test is marked `MARKER`), for a test that depends on what only a process of its own shows:
    that its pid is the server's, its process group, its parent, its parent-death signal."""
    if real_process or real_processes or not ENABLED:
        return [sys.executable, "-m", module, *args]
    return command(module, *args)


_servers: dict[str, ForkServer] = {}
_lock = threading.Lock()


def command(target: str, *args: str) -> list[str]:
    """The argv that runs ``python -m target args`` (or ``python target args`` for a script)
    through this process's fork server for ``target``, started now if it is not running.

    Its environment is what an MCP client gives a stdio server before the entry's own keys (the
    SDK's default environment): what the target reads at import time is what it read before.
    """
    with _lock:
        server = _servers.get(target)
        if server is None or not server.alive():
            if server is not None:
                server.stop()
            from mcp.client.stdio import get_default_environment

            server = _servers[target] = ForkServer(target, get_default_environment()).start()
        return server.command(*args)


def pids() -> set[int]:
    """The pids of this process's fork servers (they are the harness's, not any test's)."""
    with _lock:
        return {s.process.pid for s in _servers.values() if s.process is not None}


def stop_all() -> None:
    with _lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.stop()


atexit.register(stop_all)


# --- The fork server process ---------------------------------------------------------------------


@dataclass
class _Child:
    pid: int
    pidfd: int  # -1 once reaped
    connection: socket.socket | None  # to its launcher; None once the launcher has gone


def serve(path: str, target: str, parent: int) -> None:
    """Import ``target`` once, then fork a child for each launcher that connects; report each
    child's exit status to its launcher and kill a child whose launcher has gone."""
    if target.endswith(".py"):
        sys.path[0] = str(Path(target).resolve().parent)  # as ``python script.py`` has it
        spec = importlib.util.spec_from_file_location("_forkserver_target", target)
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    else:
        importlib.import_module(target)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(128)
    children: list[_Child] = []
    selector = selectors.PollSelector()  # poll: no kernel object for a child to inherit
    selector.register(listener, selectors.EVENT_READ)
    print("ready", flush=True)
    while True:
        events = selector.select(PARENT_POLL)
        if os.getppid() != parent:
            os.killpg(0, signal.SIGKILL)  # the test process died: so do we and every server
        # New launchers last: a descriptor closed by an earlier event may then be reused.
        for key, _ in sorted(events, key=lambda event: event[0].fileobj is listener):
            if key.fileobj is listener:
                child = _spawn(listener, target, selector, children)
                if child is not None:
                    assert child.connection is not None
                    children.append(child)
                    selector.register(child.pidfd, selectors.EVENT_READ, child)
                    selector.register(child.connection, selectors.EVENT_READ, child)
                continue
            child = key.data
            if key.fileobj is child.connection:
                # The launcher sends nothing after its header: readable means it has gone.
                selector.unregister(child.connection)
                child.connection.close()
                child.connection = None
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGKILL)
            elif key.fileobj == child.pidfd:  # the child exited: reap it, tell its launcher
                selector.unregister(child.pidfd)
                _, status = os.waitpid(child.pid, 0)
                os.close(child.pidfd)
                child.pidfd = -1
                children.remove(child)
                if child.connection is not None:
                    selector.unregister(child.connection)
                    with contextlib.suppress(OSError):
                        child.connection.sendall(_STATUS.pack(os.waitstatus_to_exitcode(status)))
                    child.connection.close()
                    child.connection = None


def _spawn(
    listener: socket.socket, target: str, selector: selectors.BaseSelector, children: list[_Child]
) -> _Child | None:
    connection, _ = listener.accept()
    try:
        connection.settimeout(HEADER_TIMEOUT)
        header, fds = _receive(connection)
    except (OSError, ValueError) as exc:
        print(f"forkserver {target}: a launcher's header was unreadable: {exc!r}", file=sys.stderr)
        connection.close()
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        # The child keeps only the launcher's streams: no pipe or socket of another child's.
        selector.close()
        listener.close()
        connection.close()
        for other in children:
            os.close(other.pidfd)
            if other.connection is not None:
                other.connection.close()
        _run(target, header, fds)  # never returns
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(OSError):  # gone already: the child is killed as its EOF is seen
        connection.sendall(_STATUS.pack(pid))  # for the launcher to pass signals on
    return _Child(pid, os.pidfd_open(pid), connection)


def _receive(connection: socket.socket) -> tuple[dict[str, object], list[int]]:
    head, fds, _, _ = socket.recv_fds(connection, _LENGTH.size, 3)
    if len(head) != _LENGTH.size or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError(f"expected a length and 3 descriptors, got {head!r} and {len(fds)}")
    (length,) = _LENGTH.unpack(head)
    body = b""
    while len(body) < length:
        chunk = connection.recv(length - len(body))
        if not chunk:
            raise ConnectionError("the launcher went away")
        body += chunk
    return json.loads(body), fds


def _run(target: str, header: dict[str, object], fds: list[int]) -> None:
    """In the child: take the launcher's streams, environment, directory and arguments, run the
    target as ``__main__``, exit as the interpreter would have."""
    status = 1
    try:
        for stream, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, stream)
            os.close(fd)
        env, cwd, argv = header["env"], header["cwd"], header["argv"]
        assert isinstance(env, dict) and isinstance(cwd, str) and isinstance(argv, list)
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        # Log stamps count from when logging was imported: in the fork server, long before.
        logging._startTime = time.time()  # type: ignore[attr-defined]
        sys.argv = [target, *argv]
        if target.endswith(".py"):
            runpy.run_path(target, run_name="__main__")
        else:
            # As ``python -m`` would: the body runs as __main__, the module itself not yet imported.
            sys.modules.pop(target, None)
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            status = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()  # what an interpreter's exit runs
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(status & 0xFF)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], int(sys.argv[3]))
