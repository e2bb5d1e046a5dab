"""Run a test server over HTTP (streamable HTTP or SSE) in a subprocess, for tests.

    with HTTPServer("streamable-http") as server:
        SDKTransport(HTTPEndpoint(server.url))

The server listens on 127.0.0.1 on a free port; entering waits until it accepts connections;
leaving terminates and reaps it. It is forked from a fork server that imported its module
(tests/harness/forkserver.py) unless ``real_process`` is true.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from tests.harness import forkserver

__all__ = ["REPO_ROOT", "HTTPServer", "free_port"]

REPO_ROOT = Path(__file__).resolve().parents[2]

_READY_TIMEOUT = 20.0
_STOP_TIMEOUT = 5.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_LISTENING = re.compile(r"mcp-actors serve: listening on http://\S*:(\d+)/mcp")


def gateway_port(stderr: str) -> int | None:
    """The port an ``mcp-actors serve --http HOST:0`` bound, once its stderr says so. Serving on
    port 0 leaves no moment, as `free_port` does, in which another test's process takes it."""
    bound = _LISTENING.search(stderr)
    return int(bound.group(1)) if bound else None


class HTTPServer:
    """A server module from ``tests.servers`` serving HTTP in a child process."""

    def __init__(
        self,
        transport: str = "streamable-http",
        module: str = "tests.servers.fixture_server",
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        real_process: bool = False,
    ) -> None:
        self.transport = transport
        self.real_process = real_process
        self.module = module
        self.extra_args = extra_args
        self.env = env
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The MCP endpoint: ``/mcp`` for streamable HTTP, ``/sse`` for SSE."""
        path = "/sse" if self.transport == "sse" else "/mcp"
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> HTTPServer:
        """Start the server and wait until its port accepts connections."""
        self.port = free_port()
        env = {**os.environ, **(self.env or {})}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            forkserver.python_module(
                self.module,
                "--transport",
                self.transport,
                "--port",
                str(self.port),
                *self.extra_args,
                real_process=self.real_process,
            ),
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + _READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                status = self.process.returncode
                raise RuntimeError(f"{self.module} exited with status {status} before serving")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.module} did not accept connections within {_READY_TIMEOUT}s")

    def kill(self) -> None:
        """Kill the server at once (a crash, as far as clients can tell) and reap it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(_STOP_TIMEOUT)

    def stop(self) -> None:
        """Terminate the server and reap it."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(_STOP_TIMEOUT)

    def __enter__(self) -> HTTPServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
