"""A fork server for ``client.py``: the conformance suite starts the client once per scenario,
and each start spent most of its CPU time importing the SDK and the runtime anew.

`ClientForkServer` runs one process that imports ``client.py`` (the SDK, the runtime) once and
then forks a process per scenario. The suite runs its `command`: ``python -S launch.py SOCKET ARGS``
(the standard library only, a few milliseconds), which hands its arguments, environment, working
directory and standard streams to the fork server and exits with the forked client's status.
Every scenario still runs in a process of its own with a runtime started from nothing; only
the imports are shared. What a module reads from the environment at import time it reads from
the fork server's, which is the test process's, as the suite's own would be.

A forked client dies with its launcher (it watches the launcher's connection), and every forked
client dies with the fork server (one process group, killed when the context exits).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
CLIENT = HERE / "client.py"
LAUNCH = HERE / "launch.py"
READY_TIMEOUT = 60.0

__all__ = ["ClientForkServer"]

_LENGTH = struct.Struct("!Q")
_STATUS = struct.Struct("!i")


class ClientForkServer:
    """The fork server as a context: `command` is what the suite is to run for the client."""

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="mcp-actors-forkserver-")
        self.socket_path = str(Path(self._folder.name) / "client.sock")
        self._process: subprocess.Popen[bytes] | None = None

    def command(self, *client_args: str) -> list[str]:
        """The command that runs ``client.py client_args...`` (the suite appends the URL)."""
        return [sys.executable, "-S", str(LAUNCH), self.socket_path, *client_args]

    def __enter__(self) -> ClientForkServer:
        self._process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), self.socket_path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            start_new_session=True,  # its forked clients are in its group: one kill ends them all
        )
        assert self._process.stdout is not None
        ready, _, _ = select.select([self._process.stdout], [], [], READY_TIMEOUT)
        line = self._process.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            self.__exit__(None, None, None)
            raise AssertionError(f"the client fork server did not start in {READY_TIMEOUT:.0f}s: {line!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(30)
            if self._process.stdout is not None:
                self._process.stdout.close()
            self._process = None
        self._folder.cleanup()


def _load_client() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_client", CLIENT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def serve(path: str) -> None:
    """Import the client once, then fork a client for each launcher that connects."""
    client = _load_client()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the forked clients
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            _run_client(client, connection)  # never returns
        connection.close()


def _receive(connection: socket.socket) -> tuple[dict[str, object], list[int]]:
    head, fds, _, _ = socket.recv_fds(connection, _LENGTH.size, 3)
    (length,) = _LENGTH.unpack(head)
    body = b""
    while len(body) < length:
        chunk = connection.recv(length - len(body))
        if not chunk:
            raise ConnectionError("the launcher went away")
        body += chunk
    return json.loads(body), fds


def _run_client(client: ModuleType, connection: socket.socket) -> None:
    status = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        header, fds = _receive(connection)
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        env = header["env"]
        assert isinstance(env, dict)
        os.environ.clear()
        os.environ.update(env)
        os.chdir(str(header["cwd"]))
        threading.Thread(target=_die_with_launcher, args=(connection,), daemon=True).start()
        # The client's log stamps are milliseconds since logging was imported: in the fork
        # server, long before this client. Count from now, as a client started anew would.
        logging._startTime = time.time()
        argv = header["argv"]
        assert isinstance(argv, list)
        status = client.main([str(CLIENT), *argv])
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(OSError):
            connection.sendall(_STATUS.pack(status))
        os._exit(status)


def _die_with_launcher(connection: socket.socket) -> None:
    """The suite stops a client by killing what it started, the launcher: follow it."""
    with contextlib.suppress(OSError):
        connection.recv(1)
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    serve(sys.argv[1])
